import type { Pause, PauseStore } from '@payhooks/core'
import { check, nonEmptyString, positiveNumber } from '@payhooks/core/validations'
import type { Cluster, Redis } from 'ioredis'
import { connectionDeadline } from './connection.js'
import { redisHealth } from './health.js'
import type { RedisPauseStoreOptions } from './types.js'

/** A pause as its hash field keeps it. */
interface Stored {
  reason: string
  since: number
  by?: string
}

function toPause(eventType: string, value: string): Pause | undefined {
  try {
    const stored = JSON.parse(value) as Stored
    if (typeof stored.since !== 'number' || typeof stored.reason !== 'string') return undefined
    const pause: Pause = { eventType, reason: stored.reason, since: new Date(stored.since) }
    if (typeof stored.by === 'string') pause.by = stored.by
    return pause
  } catch {
    return undefined
  }
}

/**
 * The pauses of a receiver fleet on Redis (standalone, Sentinel or Cluster), for `createWebhooks({ pauses })`: one
 * hash, a field per paused type, so every instance reads them all with one `HGETALL` every `refreshMs` (a pause
 * reaches each within about a second, and the hot path never waits on Redis). Nothing expires: a pause lasts until
 * resumed. Takes any `ioredis` client and never closes it.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { redisDeadLetterStore, redisPauseStore, redisStore } from '@payhooks/redis'
 * import { Redis } from 'ioredis'
 *
 * const redis = new Redis(process.env.REDIS_URL!)
 * const webhooks = createWebhooks({
 *   secret,
 *   store: redisStore(redis),
 *   deadLetters: redisDeadLetterStore(redis),
 *   pauses: redisPauseStore(redis),
 * })
 */
export function redisPauseStore(client: Redis | Cluster, options: RedisPauseStoreOptions = {}): PauseStore {
  const where = 'redisPauseStore'
  const key = `${nonEmptyString(options.keyPrefix ?? 'payhooks-pauses:', where, 'keyPrefix')}pauses`
  const refreshMs = options.refreshMs ?? 1000
  check(
    typeof refreshMs === 'number' && refreshMs >= 10 && refreshMs <= 60_000,
    where,
    'refreshMs',
    'be a number of milliseconds from 10 to 60000',
    RangeError,
  )
  const commandTimeoutMs = positiveNumber(options.commandTimeoutMs ?? 1000, where, 'commandTimeoutMs')
  const deadline = connectionDeadline(client, { timeoutMs: commandTimeoutMs, caller: where })
  const { call } = deadline
  return {
    refreshMs,
    async pause(pause) {
      const stored: Stored = { reason: pause.reason, since: pause.since.getTime() }
      if (pause.by !== undefined) stored.by = pause.by
      await call(() => client.hset(key, pause.eventType, JSON.stringify(stored)), 'HSET got no reply from Redis')
    },
    async resume(eventType) {
      return (await call(() => client.hdel(key, eventType), 'HDEL got no reply from Redis')) > 0
    },
    async list() {
      const fields = await call(() => client.hgetall(key), 'HGETALL got no reply from Redis')
      const pauses: Pause[] = []
      for (const [eventType, value] of Object.entries(fields)) {
        const pause = toPause(eventType, value)
        if (pause) pauses.push(pause)
      }
      return pauses
    },
    health: () => redisHealth(client, deadline, 'pause_redis', 'the pause store', 'a pause lost resumes its type'),
  }
}
