import { DEFAULT_RETENTION_MS, journalRetention, RETRY_WINDOW_MS } from '@payhooks/core'
import { check, nonEmptyString, positiveInteger, positiveNumber } from '@payhooks/core/validations'
import type { Cluster, Redis } from 'ioredis'
import type { RedisDeadLetterStoreOptions, RedisJournalOptions, RedisStoreOptions } from './types.js'

// Every option check of redisStore, with its error message, so a mistake fails at start-up.

/** {@link RedisStoreOptions} with their defaults, checked. */
export function storeOptions(options: RedisStoreOptions): Required<RedisStoreOptions> {
  const keyPrefix = options.keyPrefix ?? 'payhooks:'
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const commandTimeoutMs = options.commandTimeoutMs ?? 1000
  if (typeof keyPrefix !== 'string') throw new TypeError('redisStore: keyPrefix must be a string')
  if (!(retentionMs >= RETRY_WINDOW_MS && Number.isSafeInteger(retentionMs))) {
    throw new RangeError('redisStore: retentionMs must be a whole number covering the 72-hour retry window')
  }
  positiveNumber(commandTimeoutMs, 'redisStore', 'commandTimeoutMs')
  const rolloutMs = options.rolloutMs ?? 3_600_000
  check(Number.isSafeInteger(rolloutMs) && rolloutMs >= 0, 'redisStore', 'rolloutMs', 'be a whole number, 0 or more')
  return { keyPrefix, retentionMs, commandTimeoutMs, rolloutMs }
}

/** The `leaseMs` of a claim. */
export function leaseMs(value: number): number {
  check(value > 0 && Number.isFinite(value), 'redisStore', 'leaseMs', 'be positive')
  return value
}

/** Whether `prefix` holds a Redis Cluster hash tag: the first `{` followed, later, by a `}` with something between. */
export function hasHashTag(prefix: string): boolean {
  const open = prefix.indexOf('{')
  const close = open < 0 ? -1 : prefix.indexOf('}', open + 1)
  return close > open + 1
}

/** {@link RedisDeadLetterStoreOptions} with their defaults, checked, for `client`. */
export function deadLetterStoreOptions(
  options: RedisDeadLetterStoreOptions,
  client: Redis | Cluster,
): Required<RedisDeadLetterStoreOptions> {
  const where = 'redisDeadLetterStore'
  const keyPrefix = nonEmptyString(options.keyPrefix ?? '{payhooks-dead-letters}:', where, 'keyPrefix')
  const replayedRetentionMs = options.replayedRetentionMs ?? 7 * 24 * 60 * 60 * 1000
  check(
    Number.isSafeInteger(replayedRetentionMs) && replayedRetentionMs > 0,
    where,
    'replayedRetentionMs',
    'be a positive whole number',
  )
  const commandTimeoutMs = positiveNumber(options.commandTimeoutMs ?? 1000, where, 'commandTimeoutMs')
  if ((client as Cluster).isCluster) {
    const clientPrefix = (client as Cluster).options.keyPrefix ?? ''
    check(
      hasHashTag(clientPrefix + keyPrefix),
      where,
      'keyPrefix',
      "hold a hash tag on a Redis Cluster, such as '{payhooks-dead-letters}:'",
      TypeError,
    )
  }
  return { keyPrefix, replayedRetentionMs, commandTimeoutMs }
}

/** {@link RedisJournalOptions} with their defaults, checked. */
export function journalOptions(options: RedisJournalOptions): Required<RedisJournalOptions> {
  const where = 'redisJournal'
  const keyPrefix = nonEmptyString(options.keyPrefix ?? 'payhooks-journal:', where, 'keyPrefix')
  const retentionMs = journalRetention(options.retentionMs, where)
  const shards = positiveInteger(options.shards ?? 16, where, 'shards')
  check(shards <= 256, where, 'shards', 'be at most 256')
  const maxAnswersPerEvent = positiveInteger(options.maxAnswersPerEvent ?? 200, where, 'maxAnswersPerEvent')
  const commandTimeoutMs = positiveNumber(options.commandTimeoutMs ?? 5000, where, 'commandTimeoutMs')
  return { keyPrefix, retentionMs, shards, maxAnswersPerEvent, commandTimeoutMs }
}
