import {
  type DeadLetter,
  type DeadLetterFilter,
  type DeadLetterStore,
  deadLetterCountQuery,
  deadLetterQuery,
  type NormalizedDeadLetterQuery,
} from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { connectionDeadline } from './connection.js'
import { DELETE_SCRIPT, PARK_SCRIPT, REPLAYED_SCRIPT, UPGRADE_SCRIPT, WALK_SCRIPT } from './dead-letter-scripts.js'
import { countCreated, pageCreated, type WindowReads } from './dead-letter-windows.js'
import { redisHealth } from './health.js'
import type { RedisDeadLetterStoreOptions } from './types.js'
import { deadLetterStoreOptions } from './validations.js'

/** The layout this code keeps (3: the `y:` sets by created time); an older one is upgraded by `init`. */
const LAYOUT = '3'
const UPGRADE_CHUNK = 500

interface DeadLetterCommands {
  payhooksDeadLetterParkBuffer(letterKey: string, ...args: (string | Buffer)[]): Promise<Buffer[]>
  payhooksDeadLetterReplayed(letterKey: string, ...args: (string | number)[]): Promise<number>
  payhooksDeadLetterDelete(letterKey: string, ...args: string[]): Promise<number>
  payhooksDeadLetterUpgrade(indexKey: string, ...args: (string | number)[]): Promise<number>
  payhooksDeadLetterWalk(
    lexKey: string,
    createdKey: string,
    ...args: (string | number)[]
  ): Promise<[string[], string, number]>
}

const pad = (ms: number) => String(Math.max(0, Math.trunc(ms))).padStart(15, '0')
const MEMBER_ID_AT = 16
const STATUS_SET = { parked: 'p', replayed: 'r', all: 'a' } as const

/**
 * The sorted set holding the letters of `query`'s status, code and event type: in list order (`x`), or scored by
 * the event's `created_at` (`y`).
 */
function setOf(prefix: string, query: DeadLetterFilter & { status: keyof typeof STATUS_SET }, kind = 'x'): string {
  const base = `${prefix}${kind}:${STATUS_SET[query.status]}`
  if (query.code !== undefined && query.eventType !== undefined) return `${base}:ct:${query.code}:${query.eventType}`
  if (query.code !== undefined) return `${base}:c:${query.code}`
  if (query.eventType !== undefined) return `${base}:t:${query.eventType}`
  return base
}

/** ZRANGEBYLEX bounds of the query's time range, narrowed to past its keyset position when it has one. */
function rangeOf(query: NormalizedDeadLetterQuery | (DeadLetterFilter & { position?: undefined; order?: undefined })) {
  let min = query.parkedAfter ? `[${pad(query.parkedAfter.getTime())}` : '-'
  let max = query.parkedBefore ? `(${pad(query.parkedBefore.getTime())}` : '+'
  const { position } = query
  if (position) {
    const at = `${pad(position.parkedAt)}:${position.eventId}`
    // Both bounds are of one kind on each side, so the tighter is the lexically greater min or lesser max.
    if (query.order === 'oldest') min = min === '-' || min.slice(1) <= at ? `(${at}` : min
    else max = max === '+' || at < max.slice(1) ? `(${at}` : max
  }
  return { min, max }
}

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
 * headers, reason and times) plus entries in sorted sets by status, code and event type; `park`, `markReplayed`
 * and `delete` are each one atomic script, and `park` leaves a replayed letter (or a parked one of other bytes) as
 * it is. `count` (any filter) and `list` (any page, by `after` or `offset`) are one O(log n) command each, so
 * they cost the same at 100 letters or 100,000; with a window of the events' `created_at` (`createdAfter`,
 * `createdBefore`), a count alone is one too, and a count with a parked window or a page reads at most about the
 * letters of the smaller window. `init` indexes the letters an older version parked.
 * `durable`, so a receiver answers 200 once an event is parked here: give Redis persistence (AOF) and
 * `maxmemory-policy noeviction`, since parked letters carry no TTL and are kept until replayed. Replayed
 * letters are kept `replayedRetentionMs`, then forgotten by the next writes.
 *
 * Takes any `ioredis` client (standalone, Sentinel or Cluster) and never closes it. On a Cluster the
 * `keyPrefix` must hold a hash tag (the default `{payhooks-dead-letters}:` does), so all of a store's keys share
 * one slot. Calls reject within `commandTimeoutMs` when Redis is down or slow: parking then fails, and the
 * delivery is answered non-2XX as without dead letters. So does a Redis full to `maxmemory`: it refuses a new letter
 * before writing any of it.
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
  const layoutKey = `${keyPrefix}layout`
  const letterKey = (eventId: string) => `${keyPrefix}letter:${eventId}`
  // Scripts name their other keys themselves, from the whole prefix: ioredis adds its own only to KEYS.
  const scriptPrefix = ((client as Redis).options?.keyPrefix ?? '') + keyPrefix

  client.defineCommand('payhooksDeadLetterPark', { numberOfKeys: 1, lua: PARK_SCRIPT })
  client.defineCommand('payhooksDeadLetterReplayed', { numberOfKeys: 1, lua: REPLAYED_SCRIPT })
  client.defineCommand('payhooksDeadLetterDelete', { numberOfKeys: 1, lua: DELETE_SCRIPT })
  client.defineCommand('payhooksDeadLetterUpgrade', { numberOfKeys: 1, lua: UPGRADE_SCRIPT })
  client.defineCommand('payhooksDeadLetterWalk', { numberOfKeys: 2, lua: WALK_SCRIPT })
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

  const reads: WindowReads = {
    zcount: (key, min, max) => call(() => client.zcount(key, min, max), 'count got no reply from Redis'),
    zlexcount: (key, min, max) => call(() => client.zlexcount(key, min, max), 'count got no reply from Redis'),
    byScore: (key, min, max, limit) =>
      call(() => client.zrangebyscore(key, min, max, 'WITHSCORES', 'LIMIT', 0, limit), 'list got no reply from Redis'),
    async walk(lex, created, { min, max, lo, hi, newest, budget, wanted }) {
      const [found, last, scanned] = await call(
        () => commands.payhooksDeadLetterWalk(lex, created, min, max, lo, hi, newest ? '1' : '0', budget, wanted),
        'list got no reply from Redis',
      )
      return { found, last, scanned }
    },
  }
  const windowed = (query: DeadLetterFilter) => query.createdAfter !== undefined || query.createdBefore !== undefined

  /** The members of a page, in its order: one ZRANGEBYLEX, or a created window's reads. */
  async function pageMembers(checked: NormalizedDeadLetterQuery): Promise<string[]> {
    const { min, max } = rangeOf(checked)
    if (windowed(checked)) {
      const sets = { lex: setOf(keyPrefix, checked), created: setOf(keyPrefix, checked, 'y') }
      return pageCreated(reads, sets, checked, min, max)
    }
    const set = setOf(keyPrefix, checked)
    return call(
      () =>
        checked.order === 'oldest'
          ? client.zrangebylex(set, min, max, 'LIMIT', checked.offset, checked.limit)
          : client.zrevrangebylex(set, max, min, 'LIMIT', checked.offset, checked.limit),
      'list got no reply from Redis',
    )
  }

  return {
    durable: true,
    keysetPaging: true,
    health: () => redisHealth(client, deadline, 'dead_letter_redis', 'the dead-letter store'),
    async init() {
      if ((await call(() => client.get(layoutKey), 'init got no reply from Redis')) === LAYOUT) return
      for (let start = 0; ; start += UPGRADE_CHUNK) {
        const seen = await call(
          () =>
            commands.payhooksDeadLetterUpgrade(
              indexKey,
              scriptPrefix,
              start,
              UPGRADE_CHUNK,
              replayedRetentionMs,
              Date.now(),
            ),
          'init got no reply from Redis',
        )
        if (seen < UPGRADE_CHUNK) break
      }
      await call(() => client.set(layoutKey, LAYOUT), 'init got no reply from Redis')
    },
    async park(event) {
      const fields = await call(
        () =>
          commands.payhooksDeadLetterParkBuffer(
            letterKey(event.eventId),
            scriptPrefix,
            event.eventId,
            event.eventType,
            Buffer.from(event.body.buffer, event.body.byteOffset, event.body.byteLength),
            JSON.stringify(event.headers),
            event.code,
            event.reason,
            event.createdAt ? String(event.createdAt.getTime()) : '',
            String(event.parkedAt.getTime()),
            String(Date.now()),
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
      const members = await pageMembers(deadLetterQuery(query, 'redisDeadLetterStore.list'))
      if (members.length === 0) return []
      const hashes = await exec<Record<string, Buffer>>((pipeline) => {
        for (const member of members) pipeline.hgetallBuffer(letterKey(member.slice(MEMBER_ID_AT)))
      }, 'list')
      // A letter forgotten in between is left out.
      return hashes.map(toLetter).filter((letter) => letter !== undefined)
    },
    async markReplayed(eventId, at) {
      const reply = await call(
        () =>
          commands.payhooksDeadLetterReplayed(
            letterKey(eventId),
            scriptPrefix,
            eventId,
            String(at.getTime()),
            replayedRetentionMs,
            String(Date.now()),
          ),
        'markReplayed got no reply from Redis',
      )
      return reply === 1
    },
    async count(query) {
      const checked = deadLetterCountQuery(query, 'redisDeadLetterStore.count')
      const { min, max } = rangeOf(checked)
      if (windowed(checked)) {
        const sets = { lex: setOf(keyPrefix, checked), created: setOf(keyPrefix, checked, 'y') }
        return countCreated(reads, sets, checked, min, max)
      }
      return call(() => client.zlexcount(setOf(keyPrefix, checked), min, max), 'count got no reply from Redis')
    },
    async delete(eventId) {
      const removed = await call(
        () => commands.payhooksDeadLetterDelete(letterKey(eventId), scriptPrefix, eventId, String(Date.now())),
        'delete got no reply from Redis',
      )
      return removed === 1
    },
  }
}
