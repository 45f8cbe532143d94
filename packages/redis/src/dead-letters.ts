import {
  type DeadLetter,
  type DeadLetterStore,
  deadLetterCountQuery,
  deadLetterMatches,
  deadLetterQuery,
  type NormalizedDeadLetterQuery,
} from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { connectionDeadline } from './connection.js'
import { redisHealth } from './health.js'
import type { RedisDeadLetterStoreOptions } from './types.js'
import { deadLetterStoreOptions } from './validations.js'

// Two keys per prefix, an index and one hash per letter, both under the prefix's hash tag: on a Cluster they
// share a slot, so a script may touch both.
// A replayed letter, or a parked one of other bytes, is left as it is; either way the letter as it stands is
// returned, so the receiver tells which.
const PARK_SCRIPT = `
local kept = redis.call('HMGET', KEYS[1], 'status', 'body')
if kept[1] == 'replayed' or (kept[1] and kept[2] ~= ARGV[3]) then return redis.call('HGETALL', KEYS[1]) end
local first = redis.call('HGET', KEYS[1], 'firstParkedAt') or ARGV[8]
redis.call('HSET', KEYS[1], 'eventId', ARGV[1], 'eventType', ARGV[2], 'body', ARGV[3], 'headers', ARGV[4],
  'code', ARGV[5], 'reason', ARGV[6], 'createdAt', ARGV[7], 'parkedAt', ARGV[8], 'firstParkedAt', first,
  'status', 'parked', 'replayedAt', '')
redis.call('HINCRBY', KEYS[1], 'parkCount', 1)
redis.call('PERSIST', KEYS[1])
redis.call('ZADD', KEYS[2], ARGV[8], ARGV[1])
return redis.call('HGETALL', KEYS[1])`

const REPLAYED_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', 'replayed', 'replayedAt', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`

interface DeadLetterCommands {
  payhooksDeadLetterParkBuffer(letterKey: string, indexKey: string, ...args: (string | Buffer)[]): Promise<Buffer[]>
  payhooksDeadLetterReplayed(letterKey: string, at: string, retentionMs: number): Promise<number>
}

/** Letters looked at per round trip while listing. */
const CHUNK = 200
const FILTER_FIELDS = ['status', 'eventType', 'code'] as const

function toLetter(hash: Record<string, Buffer>): DeadLetter | undefined {
  if (!hash.eventId) return undefined
  const text = (field: string) => hash[field]?.toString('utf8') ?? ''
  const date = (field: string) => {
    const value = text(field)
    return value === '' ? undefined : new Date(Number(value))
  }
  return {
    eventId: text('eventId'),
    eventType: text('eventType'),
    body: new Uint8Array(hash.body ?? []),
    headers: JSON.parse(text('headers') || '{}') as Record<string, string>,
    code: text('code') as DeadLetter['code'],
    reason: text('reason'),
    createdAt: date('createdAt'),
    parkedAt: date('parkedAt') as Date,
    firstParkedAt: date('firstParkedAt') as Date,
    parkCount: Number(text('parkCount')),
    status: text('status') as DeadLetter['status'],
    replayedAt: date('replayedAt'),
  }
}

/**
 * Dead letters on Redis, shared by every receiver instance: each parked event is one hash (its exact bytes,
 * headers, reason and times) plus an entry in a sorted index by parking time; `park` is one atomic script, which
 * leaves a replayed letter (or a parked one of other bytes) as it is.
 * `durable`, so a receiver answers 200 once an event is parked here: give Redis persistence (AOF) and
 * `maxmemory-policy noeviction`, since parked letters carry no TTL and are kept until replayed. Replayed
 * letters are kept `replayedRetentionMs`, then expire.
 *
 * Takes any `ioredis` client (standalone, Sentinel or Cluster) and never closes it. On a Cluster the
 * `keyPrefix` must hold a hash tag (the default `{payhooks-dead-letters}:` does), so all of a store's keys share
 * one slot. Calls reject within `commandTimeoutMs` when Redis is down or slow: parking then fails, and the
 * delivery is answered non-2XX as without dead letters.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
 * import { Redis } from 'ioredis'
 *
 * const redis = new Redis(process.env.REDIS_URL!)
 * const webhooks = createWebhooks({ secret, store: redisStore(redis), deadLetters: redisDeadLetterStore(redis) })
 */
export function redisDeadLetterStore(
  client: Redis | Cluster,
  options: RedisDeadLetterStoreOptions = {},
): DeadLetterStore {
  const { keyPrefix, replayedRetentionMs, commandTimeoutMs } = deadLetterStoreOptions(options, client)
  const indexKey = `${keyPrefix}index`
  const letterKey = (eventId: string) => `${keyPrefix}letter:${eventId}`

  client.defineCommand('payhooksDeadLetterPark', { numberOfKeys: 2, lua: PARK_SCRIPT })
  client.defineCommand('payhooksDeadLetterReplayed', { numberOfKeys: 1, lua: REPLAYED_SCRIPT })
  const commands = client as unknown as DeadLetterCommands
  const deadline = connectionDeadline(client, { timeoutMs: commandTimeoutMs, caller: 'redisDeadLetterStore' })
  const { call } = deadline

  /** Runs `pipeline` and returns each command's result, or throws the first command's error. */
  async function exec<T>(build: (pipeline: ReturnType<Redis['pipeline']>) => void, what: string): Promise<T[]> {
    const replies = await call(() => {
      const pipeline = client.pipeline()
      build(pipeline)
      return pipeline.exec()
    }, `${what} got no reply from Redis`)
    return (replies ?? []).map(([error, value]) => {
      if (error) throw error
      return value as T
    })
  }

  /** Ids of the letters matching `query`, page applied, newest first (all of them with `limit` Infinity). */
  async function matchingIds(query: NormalizedDeadLetterQuery): Promise<string[]> {
    const max = query.parkedBefore ? `(${query.parkedBefore.getTime()}` : '+inf'
    const min = query.parkedAfter ? String(query.parkedAfter.getTime()) : '-inf'
    const wanted = query.offset + query.limit
    // Times are the index's scores: filter the fields only.
    const byFields = { status: query.status, eventType: query.eventType, code: query.code }
    const found: string[] = []
    for (let start = 0; found.length < wanted; start += CHUNK) {
      const ids = await call(
        () => client.zrevrangebyscore(indexKey, max, min, 'LIMIT', start, CHUNK),
        'list got no reply from Redis',
      )
      if (ids.length === 0) break
      const fields = await exec<(string | null)[]>((pipeline) => {
        for (const id of ids) pipeline.hmget(letterKey(id), ...FILTER_FIELDS)
      }, 'list')
      const gone: string[] = []
      ids.forEach((eventId, i) => {
        const [status, eventType, code] = fields[i] ?? []
        if (status == null) gone.push(eventId)
        else if (deadLetterMatches({ status, eventType, code } as DeadLetter, byFields)) found.push(eventId)
      })
      // Replayed letters that expired: drop them from the index too.
      if (gone.length > 0) await call(() => client.zrem(indexKey, ...gone), 'list got no reply from Redis')
      if (ids.length < CHUNK) break
    }
    return found.slice(query.offset, wanted)
  }

  return {
    durable: true,
    health: () => redisHealth(client, deadline, 'dead_letter_redis', 'the dead-letter store'),
    async park(event) {
      const fields = await call(
        () =>
          commands.payhooksDeadLetterParkBuffer(
            letterKey(event.eventId),
            indexKey,
            event.eventId,
            event.eventType,
            Buffer.from(event.body.buffer, event.body.byteOffset, event.body.byteLength),
            JSON.stringify(event.headers),
            event.code,
            event.reason,
            event.createdAt ? String(event.createdAt.getTime()) : '',
            String(event.parkedAt.getTime()),
          ),
        'park got no reply from Redis',
      )
      const hash: Record<string, Buffer> = {}
      for (let i = 0; i + 1 < fields.length; i += 2)
        hash[(fields[i] as Buffer).toString('utf8')] = fields[i + 1] as Buffer
      return toLetter(hash)
    },
    async get(eventId) {
      const hash = await call(() => client.hgetallBuffer(letterKey(eventId)), 'get got no reply from Redis')
      return toLetter(hash)
    },
    async list(query) {
      const checked = deadLetterQuery(query, 'redisDeadLetterStore.list')
      const ids = await matchingIds(checked)
      if (ids.length === 0) return []
      const hashes = await exec<Record<string, Buffer>>((pipeline) => {
        for (const id of ids) pipeline.hgetallBuffer(letterKey(id))
      }, 'list')
      // A letter that expired in between is left out.
      return hashes.map(toLetter).filter((letter) => letter !== undefined)
    },
    async markReplayed(eventId, at) {
      const reply = await call(
        () => commands.payhooksDeadLetterReplayed(letterKey(eventId), String(at.getTime()), replayedRetentionMs),
        'markReplayed got no reply from Redis',
      )
      return reply === 1
    },
    async count(query) {
      const checked = deadLetterCountQuery(query, 'redisDeadLetterStore.count')
      // Every letter of the time range is looked at (its status, type and code, never its body): CHUNK a trip.
      return (await matchingIds({ ...checked, limit: Number.POSITIVE_INFINITY, offset: 0 })).length
    },
    async delete(eventId) {
      const [removed] = await exec<number>((pipeline) => {
        pipeline.del(letterKey(eventId))
        pipeline.zrem(indexKey, eventId)
      }, 'delete')
      return removed === 1
    },
  }
}
