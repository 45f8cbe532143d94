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
import { redisHealth } from './health.js'
import type { RedisDeadLetterStoreOptions } from './types.js'
import { deadLetterStoreOptions } from './validations.js'

// Keys, all under the prefix's hash tag (on a Cluster they share a slot, so a script may touch them all): one hash
// per letter (`letter:<id>`), the legacy `index` (score parkedAt, member id), and sorted sets of equal scores whose
// members `<parkedAt, 15 digits>:<id>` sort like a list (parkedAt, then eventId): one per status (`p`, `r`, `a` for
// all) and per status plus code (`c:`), event type (`t:`), or both (`ct:`). A count with any filter is one
// ZLEXCOUNT and a page one ZRANGEBYLEX from a bound (a keyset cursor, or a time): O(log n), whatever the backlog.
// Every change of a letter moves its members in the same script. Replayed letters wait in `expiry` (score: when
// they go), and each write forgets a few whose time has come, members and all.
const LIB = `
local P = ARGV[1]
local function sets(s, code, typ)
  return {P..'x:'..s, P..'x:'..s..':c:'..code, P..'x:'..s..':t:'..typ, P..'x:'..s..':ct:'..code..':'..typ}
end
local function member(at, id) return string.format('%015d', tonumber(at)) .. ':' .. id end
local function put(op, statuses, m, code, typ)
  for _, s in ipairs(statuses) do
    for _, key in ipairs(sets(s, code, typ)) do
      if op == 'add' then redis.call('ZADD', key, 0, m) else redis.call('ZREM', key, m) end
    end
  end
end
local function short(status) if status == 'replayed' then return 'r' end return 'p' end
local function purge(now)
  local due = redis.call('ZRANGEBYSCORE', P..'expiry', '-inf', now, 'LIMIT', 0, 20)
  for _, id in ipairs(due) do
    local k = P..'letter:'..id
    local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt')
    if f[1] == 'replayed' then
      put('rem', {'r', 'a'}, member(f[4], id), f[2], f[3])
      redis.call('DEL', k)
      redis.call('ZREM', P..'index', id)
    end
    redis.call('ZREM', P..'expiry', id)
  end
end
`

// A replayed letter, or a parked one of other bytes, is left as it is; either way the letter as it stands is
// returned, so the receiver tells which.
// Not flagged allow-oom (allow-oom.ts), unlike a claim's steps: a letter carries a whole body, and a full Redis
// taking letters past maxmemory grows until the host kills it, losing what it had acknowledged. A full Redis refuses
// a new letter at its first write (the HSET, nothing written before it), so the park fails, the delivery gets its
// own non-2XX answer and the service retries it; a letter already parked is parked again (its first write is a
// ZREM, and a script that wrote is never stopped midway).
// ARGV: prefix, id, type, body, headers, code, reason, createdAt, parkedAt, now.
const PARK_SCRIPT = `${LIB}
local k = P..'letter:'..ARGV[2]
local kept = redis.call('HMGET', k, 'status', 'body', 'code', 'eventType', 'parkedAt')
if kept[1] == 'replayed' or (kept[1] and kept[2] ~= ARGV[4]) then return redis.call('HGETALL', k) end
if kept[1] then put('rem', {'p', 'a'}, member(kept[5], ARGV[2]), kept[3], kept[4]) end
local first = redis.call('HGET', k, 'firstParkedAt') or ARGV[9]
redis.call('HSET', k, 'eventId', ARGV[2], 'eventType', ARGV[3], 'body', ARGV[4], 'headers', ARGV[5],
  'code', ARGV[6], 'reason', ARGV[7], 'createdAt', ARGV[8], 'parkedAt', ARGV[9], 'firstParkedAt', first,
  'status', 'parked', 'replayedAt', '')
redis.call('HINCRBY', k, 'parkCount', 1)
redis.call('PERSIST', k)
redis.call('ZADD', P..'index', ARGV[9], ARGV[2])
put('add', {'p', 'a'}, member(ARGV[9], ARGV[2]), ARGV[6], ARGV[3])
purge(ARGV[10])
return redis.call('HGETALL', k)`

// ARGV: prefix, id, replayedAt, replayed retention ms (from now, as a TTL would), now.
const REPLAYED_SCRIPT = `${LIB}
local k = P..'letter:'..ARGV[2]
local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt')
if not f[1] then return 0 end
if f[1] == 'parked' then
  local m = member(f[4], ARGV[2])
  put('rem', {'p'}, m, f[2], f[3])
  put('add', {'r'}, m, f[2], f[3])
end
redis.call('HSET', k, 'status', 'replayed', 'replayedAt', ARGV[3])
redis.call('ZADD', P..'expiry', tonumber(ARGV[5]) + tonumber(ARGV[4]), ARGV[2])
purge(ARGV[5])
return 1`

// ARGV: prefix, id, now.
const DELETE_SCRIPT = `${LIB}
local k = P..'letter:'..ARGV[2]
local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt')
redis.call('ZREM', P..'index', ARGV[2])
redis.call('ZREM', P..'expiry', ARGV[2])
purge(ARGV[3])
if not f[1] then return 0 end
put('rem', {short(f[1]), 'a'}, member(f[4], ARGV[2]), f[2], f[3])
redis.call('DEL', k)
return 1`

// Letters parked before these sets existed: indexed from the legacy index, a chunk a call (ARGV: prefix,
// start rank, chunk, replayed retention ms, now). Idempotent, so instances starting together do no harm.
const UPGRADE_SCRIPT = `${LIB}
local ids = redis.call('ZRANGE', P..'index', ARGV[2], tonumber(ARGV[2]) + tonumber(ARGV[3]) - 1)
for _, id in ipairs(ids) do
  local k = P..'letter:'..id
  local f = redis.call('HMGET', k, 'status', 'code', 'eventType', 'parkedAt', 'replayedAt')
  if f[1] then
    put('add', {short(f[1]), 'a'}, member(f[4], id), f[2], f[3])
    if f[1] == 'replayed' then
      local left = redis.call('PTTL', k)
      if left < 0 then left = tonumber(ARGV[4]) end
      redis.call('PERSIST', k)
      redis.call('ZADD', P..'expiry', tonumber(ARGV[5]) + left, id)
    end
  end
end
return #ids`

/** The layout this code keeps; an older one is upgraded by `init`. */
const LAYOUT = '2'
const UPGRADE_CHUNK = 500

interface DeadLetterCommands {
  payhooksDeadLetterParkBuffer(letterKey: string, ...args: (string | Buffer)[]): Promise<Buffer[]>
  payhooksDeadLetterReplayed(letterKey: string, ...args: (string | number)[]): Promise<number>
  payhooksDeadLetterDelete(letterKey: string, ...args: string[]): Promise<number>
  payhooksDeadLetterUpgrade(indexKey: string, ...args: (string | number)[]): Promise<number>
}

const pad = (ms: number) => String(Math.max(0, Math.trunc(ms))).padStart(15, '0')
const MEMBER_ID_AT = 16
const STATUS_SET = { parked: 'p', replayed: 'r', all: 'a' } as const

/** The sorted set holding the letters of `query`'s status, code and event type. */
function setOf(prefix: string, query: DeadLetterFilter & { status: keyof typeof STATUS_SET }): string {
  const base = `${prefix}x:${STATUS_SET[query.status]}`
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
 * they cost the same at 100 letters or 100,000. `init` indexes the letters an older version parked.
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
      const checked = deadLetterQuery(query, 'redisDeadLetterStore.list')
      const set = setOf(keyPrefix, checked)
      const { min, max } = rangeOf(checked)
      const members = await call(
        () =>
          checked.order === 'oldest'
            ? client.zrangebylex(set, min, max, 'LIMIT', checked.offset, checked.limit)
            : client.zrevrangebylex(set, max, min, 'LIMIT', checked.offset, checked.limit),
        'list got no reply from Redis',
      )
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
