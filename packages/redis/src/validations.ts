import { DEFAULT_RETENTION_MS } from '@payhooks/core'
import type { RedisStoreOptions } from './types.js'

// Every option check of redisStore, with its error message, so a mistake fails at start-up.

const RETRY_WINDOW_MS = 72 * 60 * 60 * 1000

/** {@link RedisStoreOptions} with their defaults, checked. */
export function storeOptions(options: RedisStoreOptions): Required<RedisStoreOptions> {
  const keyPrefix = options.keyPrefix ?? 'payhooks:'
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const commandTimeoutMs = options.commandTimeoutMs ?? 1000
  if (typeof keyPrefix !== 'string') throw new TypeError('redisStore: keyPrefix must be a string')
  if (!(retentionMs >= RETRY_WINDOW_MS && Number.isSafeInteger(retentionMs))) {
    throw new RangeError('redisStore: retentionMs must be a whole number covering the 72-hour retry window')
  }
  if (!(commandTimeoutMs > 0 && Number.isFinite(commandTimeoutMs))) {
    throw new RangeError('redisStore: commandTimeoutMs must be a positive number')
  }
  return { keyPrefix, retentionMs, commandTimeoutMs }
}

/** The `leaseMs` of a claim. */
export function leaseMs(value: number): number {
  if (!(value > 0 && Number.isFinite(value))) throw new RangeError('redisStore: leaseMs must be positive')
  return value
}
