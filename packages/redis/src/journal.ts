import {
  type Journal,
  type JournalListQuery,
  type JournalMinute,
  type JournalRecord,
  journalMatches,
} from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { connectionDeadline } from './connection.js'
import type { RedisJournalOptions } from './types.js'
import { journalOptions } from './validations.js'

// Layout (see docs/guide/journal.md): per event one list `e:<event_id>` of its records, oldest first, its TTL pushed
// to its newest record's time plus retention; per hour and shard a sorted set `t:<hour>:<shard>` of every record
// by time, a sorted set `o:<outcome>:<hour>:<shard>` for outcomes other than the routine `processed` and
// `duplicate` (so a list of failures walks failures only), and a hash `c:<hour>:<shard>` of counts per minute and
// outcome; each hour key expires at the hour's end plus retention. Per shard a sorted set `h:<shard>` names the hour
// keys written, scored by hour, so a list walks only those. The shard is a hash of the event id: on a
// Cluster the keys carry no hash tag, so an hour's writes spread over `shards` slots, never all on one node.

const HOUR = 3_600_000
const MINUTE = 60_000
/** Outcomes so common that a list filtered by them walks the hour's index of every record instead. */
const ROUTINE = new Set(['processed', 'duplicate'])
/** Records read per round trip and shard while listing. */
const CHUNK = 200

// A batch's writes in one script (standalone Redis). ARGV: now, retention, answers kept per event, the hour below which
// a shard's hour list drops members, then the records, one a line (a JSON text holds no raw line break): "e t c h o
// <text>", the KEYS indices of its event list, hour index, hour counts, shard's hour list and outcome index (0: none;
// t = 0 when the hour has expired), then its text. One argument for the whole batch: per argument the client's
// encoding costs more than the bytes. The script reads time and outcome from the text, derives expiries and count
// fields, and writes each count, expiry and hour member once per key.
const WRITE_SCRIPT = `
local now, retention, keep, oldest = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local newest, expires, counts, hours = {}, {}, {}, {}
local records, from, n = ARGV[5], 1, 0
while from <= #records do
  local stop = string.find(records, '\\n', from, true)
  local line = string.sub(records, from, (stop or 0) - 1)
  from = (stop or #records) + 1
  n = n + 1
  local e, t, c, h, o, text = string.match(line, '^(%d+) (%d+) (%d+) (%d+) (%d+) (.*)$')
  local record, key = cjson.decode(text), KEYS[tonumber(e)]
  local at, outcome = record[2], record[7]
  t = tonumber(t)
  redis.call('RPUSH', key, text)
  if (newest[key] or 0) < at then newest[key] = at end
  if t > 0 then
    local hour = math.floor(at / ${HOUR})
    local expireAt = (hour + 1) * ${HOUR} + retention
    c, h, o = tonumber(c), tonumber(h), tonumber(o)
    redis.call('ZADD', KEYS[t], at, text)
    expires[t], expires[c] = expireAt, expireAt
    local written = hours[h] or {}
    hours[h] = written
    written['t:' .. hour] = hour
    if o > 0 then
      redis.call('ZADD', KEYS[o], at, text)
      expires[o] = expireAt
      written['o:' .. outcome .. ':' .. hour] = hour
    end
    local fields = counts[c] or {}
    counts[c] = fields
    local field = math.floor(at / ${MINUTE}) .. ':' .. outcome
    fields[field] = (fields[field] or 0) + 1
  end
end
for key, at in pairs(newest) do
  local ttl = at + retention - now
  if ttl <= 0 then redis.call('DEL', key) else
    redis.call('LTRIM', key, -keep, -1)
    if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl) end
  end
end
for c, fields in pairs(counts) do
  for field, n in pairs(fields) do redis.call('HINCRBY', KEYS[c], field, n) end
end
for k, at in pairs(expires) do redis.call('PEXPIREAT', KEYS[k], at) end
for h, written in pairs(hours) do
  for member, hour in pairs(written) do redis.call('ZADD', KEYS[h], hour, member) end
  redis.call('ZREMRANGEBYSCORE', KEYS[h], '-inf', oldest)
  redis.call('PEXPIRE', KEYS[h], retention + ${2 * HOUR})
end
return n`

interface JournalCommands {
  payhooksJournalWrite(...keysThenArgs: (string | number)[]): Promise<number>
}

type Encoded = [string, number, string, string, string | null, number, string, string, number, number, string?]

const encode = (r: JournalRecord): string =>
  JSON.stringify([
    r.id,
    r.at,
    r.eventId,
    r.eventType,
    r.createdAt,
    r.status,
    r.outcome,
    r.instance,
    r.durationMs,
    r.secretIndex,
    ...(r.secretLabel === undefined ? [] : [r.secretLabel]),
  ])

function decode(text: string): JournalRecord {
  const [id, at, eventId, eventType, createdAt, status, outcome, instance, durationMs, secretIndex, secretLabel] =
    JSON.parse(text) as Encoded
  const record = { id, at, eventId, eventType, createdAt, status, outcome, instance, durationMs, secretIndex }
  return secretLabel === undefined ? record : { ...record, secretLabel }
}

/** FNV-1a of `text`, for the shard of an event id. */
function hash(text: string): number {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return h >>> 0
}

/** Walks one sorted set newest first within scores [min, max], a chunk per round trip. */
class Walk {
  private buffer: JournalRecord[] = []
  private offset = 0
  private done = false
  constructor(
    private readonly fetch: (key: string, max: number, min: number, offset: number) => Promise<string[]>,
    private readonly key: string,
    private readonly max: number,
    private readonly min: number,
  ) {}

  async head(): Promise<JournalRecord | undefined> {
    if (this.buffer.length === 0 && !this.done) {
      const texts = await this.fetch(this.key, this.max, this.min, this.offset)
      this.offset += texts.length
      if (texts.length < CHUNK) this.done = true
      // Members of equal score come in reverse lexical order of the text, not of the id: sort the chunk.
      this.buffer = texts.map(decode).sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
    }
    return this.buffer[0]
  }

  take(): void {
    this.buffer.shift()
  }
}

/**
 * The answers of a receiver fleet on Redis (standalone, Sentinel or Cluster), for `createWebhooks({ journal })`:
 * `webhooks.events.get`, `list` and `counts` from any instance. Each batch of answers is one script call (on a Cluster,
 * its commands go out together to the nodes that own them), written off the hot path. Every key expires by TTL:
 * nothing sweeps, nothing holds a lock. Takes any `ioredis` client and never closes it.
 *
 * Memory: about 700 to 800 bytes per answer with the defaults (`bench/journal.bench.mjs` measures it), bounded
 * by `retentionMs` and, per event, `maxAnswersPerEvent`.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { redisJournal, redisStore } from '@payhooks/redis'
 * import { Redis } from 'ioredis'
 *
 * const redis = new Redis(process.env.REDIS_URL!)
 * const webhooks = createWebhooks({ secret, store: redisStore(redis), journal: redisJournal(redis) })
 */
export function redisJournal(client: Redis | Cluster, options: RedisJournalOptions = {}): Journal {
  const { keyPrefix, retentionMs, shards, maxAnswersPerEvent, commandTimeoutMs } = journalOptions(options)
  const cluster = (client as Cluster).isCluster === true
  client.defineCommand('payhooksJournalWrite', { lua: WRITE_SCRIPT })
  const commands = client as unknown as JournalCommands
  const { call } = connectionDeadline(client, { timeoutMs: commandTimeoutMs, caller: 'redisJournal' })

  const eventKey = (eventId: string) => `${keyPrefix}e:${eventId}`
  const shardOf = (eventId: string) => hash(eventId) % shards
  const timeKey = (hour: number, shard: number) => `${keyPrefix}t:${hour}:${shard}`
  const outcomeKey = (outcome: string, hour: number, shard: number) => `${keyPrefix}o:${outcome}:${hour}:${shard}`
  const countKey = (hour: number, shard: number) => `${keyPrefix}c:${hour}:${shard}`
  /** Per shard, the hour keys written (`t:<hour>`, `o:<outcome>:<hour>`), scored by hour: what a list walks. */
  const hoursKey = (shard: number) => `${keyPrefix}h:${shard}`

  /** Sends `build`'s commands together: one pipeline on a standalone Redis, or each to its node on a Cluster. */
  async function batch<T>(build: (redis: Redis) => unknown, what: string): Promise<T[]> {
    return call(async () => {
      if (cluster) {
        // A Cluster pipeline must keep to one node; sent at once, the commands are pipelined per connection anyway.
        const sent: Promise<unknown>[] = []
        const proxy = new Proxy(client, {
          get: (target, name) => {
            const value = Reflect.get(target, name) as unknown
            if (typeof value !== 'function') return value
            return (...args: unknown[]) => {
              const result = (value as (...a: unknown[]) => Promise<unknown>).apply(target, args)
              sent.push(result)
              return result
            }
          },
        })
        build(proxy as unknown as Redis)
        return (await Promise.all(sent)) as T[]
      }
      const pipeline = (client as Redis).pipeline()
      build(pipeline as unknown as Redis)
      const replies = (await pipeline.exec()) ?? []
      return replies.map(([error, value]) => {
        if (error) throw error
        return value as T
      })
    }, `${what} got no reply from Redis`)
  }

  /** The hour below which a shard's hour list drops its members. */
  const oldestHour = (now: number) => Math.floor((now - retentionMs) / HOUR) - 1

  /**
   * Standalone Redis: the batch in one script call (see WRITE_SCRIPT). Each record is encoded once, on a line with its
   * route; the script derives expiries and count fields, so the work here per record is a key, a route and a text.
   */
  async function writeScript(records: readonly JournalRecord[]): Promise<void> {
    const now = Date.now()
    const keys: string[] = []
    const lines: string[] = []
    /** Per hour and shard, the KEYS indices "t c h" of its index, its counts and the shard's hour list. */
    const buckets = new Map<number, string>()
    const outcomes = new Map<string, number>()
    for (const record of records) {
      const { eventId, outcome } = record
      const e = keys.push(eventKey(eventId))
      const hour = Math.floor(record.at / HOUR)
      let route: string
      if ((hour + 1) * HOUR + retentionMs <= now) route = `${e} 0 0 0 0`
      else {
        const shard = shardOf(eventId)
        let bucket = buckets.get(hour * shards + shard)
        if (bucket === undefined) {
          bucket = `${keys.push(timeKey(hour, shard))} ${keys.push(countKey(hour, shard))} ${keys.push(hoursKey(shard))}`
          buckets.set(hour * shards + shard, bucket)
        }
        let o = 0
        if (!ROUTINE.has(outcome)) {
          const key = outcomeKey(outcome, hour, shard)
          o = outcomes.get(key) ?? keys.push(key)
          outcomes.set(key, o)
        }
        route = `${e} ${bucket} ${o}`
      }
      lines.push(`${route} ${encode(record)}`)
    }
    // One command for the whole batch: the cost per answer of a command of its own would be the journal's cost.
    await call(
      () =>
        commands.payhooksJournalWrite(
          keys.length,
          ...keys,
          now,
          retentionMs,
          maxAnswersPerEvent,
          oldestHour(now),
          lines.join('\n'),
        ),
      'a journal write got no reply from Redis',
    )
  }

  /** A Cluster: the keys live on many slots, so the script's steps go out as plain commands, sent together. */
  async function writeCommands(records: readonly JournalRecord[]): Promise<void> {
    const now = Date.now()
    const byEvent = new Map<string, { newest: number; texts: string[] }>()
    const byIndex = new Map<string, { expireAt: number; members: (string | number)[] }>()
    const counts = new Map<string, { expireAt: number; fields: Map<string, number> }>()
    const hours = new Map<number, Map<string, number>>()
    for (const record of records) {
      const text = encode(record)
      const event = byEvent.get(record.eventId)
      if (event) {
        event.texts.push(text)
        event.newest = Math.max(event.newest, record.at)
      } else byEvent.set(record.eventId, { newest: record.at, texts: [text] })
      const hour = Math.floor(record.at / HOUR)
      const expireAt = (hour + 1) * HOUR + retentionMs
      if (expireAt <= now) continue
      const shard = shardOf(record.eventId)
      const keys = [timeKey(hour, shard)]
      const written = hours.get(shard) ?? new Map<string, number>()
      hours.set(shard, written.set(`t:${hour}`, hour))
      if (!ROUTINE.has(record.outcome)) {
        keys.push(outcomeKey(record.outcome, hour, shard))
        written.set(`o:${record.outcome}:${hour}`, hour)
      }
      for (const key of keys) {
        const index = byIndex.get(key) ?? { expireAt, members: [] }
        index.members.push(record.at, text)
        byIndex.set(key, index)
      }
      const key = countKey(hour, shard)
      const count = counts.get(key) ?? { expireAt, fields: new Map<string, number>() }
      const field = `${Math.floor(record.at / MINUTE)}:${record.outcome}`
      count.fields.set(field, (count.fields.get(field) ?? 0) + 1)
      counts.set(key, count)
    }
    await batch((redis) => {
      for (const [eventId, { newest, texts }] of byEvent) {
        const key = eventKey(eventId)
        const ttl = newest + retentionMs - now
        if (ttl <= 0) redis.del(key)
        else {
          redis.rpush(key, ...texts)
          redis.ltrim(key, -maxAnswersPerEvent, -1)
          redis.pexpire(key, ttl)
        }
      }
      for (const [key, { expireAt, members }] of byIndex) {
        redis.zadd(key, ...members)
        redis.pexpireat(key, expireAt)
      }
      for (const [key, { expireAt, fields }] of counts) {
        for (const [field, n] of fields) redis.hincrby(key, field, n)
        redis.pexpireat(key, expireAt)
      }
      for (const [shard, written] of hours) {
        const key = hoursKey(shard)
        redis.zadd(key, ...[...written].flatMap(([member, hour]) => [hour, member]))
        redis.zremrangebyscore(key, '-inf', oldestHour(now))
        redis.pexpire(key, retentionMs + 2 * HOUR)
      }
    }, 'a journal write')
  }

  return {
    retentionMs,
    write: cluster ? writeCommands : writeScript,
    async answers(eventId) {
      const texts = await call(() => client.lrange(eventKey(eventId), 0, -1), 'a journal read got no reply from Redis')
      const oldest = Date.now() - retentionMs
      return texts
        .map(decode)
        .filter((record) => record.at >= oldest)
        .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1))
    },
    async list(query: JournalListQuery) {
      const now = Date.now()
      const oldest = Math.max(now - retentionMs, query.from ?? Number.NEGATIVE_INFINITY)
      const newest = Math.min(
        query.to === undefined ? now + MINUTE : query.to - 1,
        query.after?.at ?? Number.POSITIVE_INFINITY,
      )
      const indexOf =
        query.outcome !== undefined && !ROUTINE.has(query.outcome)
          ? (hour: number, shard: number) => outcomeKey(query.outcome as string, hour, shard)
          : timeKey
      const fetch = (key: string, max: number, min: number, offset: number) =>
        call(
          () => client.zrevrangebyscore(key, max, min, 'LIMIT', offset, CHUNK),
          'a journal list got no reply from Redis',
        )
      // One round trip to the shards' hour lists finds which hour keys were written; only those are walked.
      const wanted = query.outcome !== undefined && !ROUTINE.has(query.outcome) ? `o:${query.outcome}:` : 't:'
      const written = await batch<string[]>((redis) => {
        for (let shard = 0; shard < shards; shard++) {
          redis.zrangebyscore(hoursKey(shard), Math.floor(oldest / HOUR), Math.floor(newest / HOUR))
        }
      }, 'a journal list')
      const byHour = new Map<number, string[]>()
      written.forEach((members, shard) => {
        for (const member of members) {
          if (!member.startsWith(wanted)) continue
          const hour = Number(member.slice(wanted.length))
          byHour.set(hour, [...(byHour.get(hour) ?? []), indexOf(hour, shard)])
        }
      })
      const found: JournalRecord[] = []
      for (const hour of [...byHour.keys()].sort((a, b) => b - a)) {
        const hourKeys = byHour.get(hour) as string[]
        const max = Math.min(newest, (hour + 1) * HOUR - 1)
        const walks = hourKeys.map((key) => new Walk(fetch, key, max, oldest))
        for (;;) {
          const heads = await Promise.all(walks.map((walk) => walk.head()))
          let best = -1
          for (let i = 0; i < heads.length; i++) {
            const head = heads[i]
            const current = heads[best]
            if (head && (!current || head.at > current.at || (head.at === current.at && head.id > current.id))) best = i
          }
          if (best < 0) break
          const record = heads[best] as JournalRecord
          ;(walks[best] as Walk).take()
          if (journalMatches(record, query)) {
            found.push(record)
            if (found.length >= query.limit) return found
          }
        }
      }
      return found
    },
    async counts(from, to) {
      const oldest = Math.max(from, Date.now() - retentionMs)
      const keys: string[] = []
      for (let hour = Math.floor(oldest / HOUR); hour * HOUR < to; hour++) {
        for (let shard = 0; shard < shards; shard++) keys.push(countKey(hour, shard))
      }
      const hashes = await batch<Record<string, string>>((redis) => {
        for (const key of keys) redis.hgetall(key)
      }, 'a journal count')
      const sums = new Map<string, JournalMinute>()
      for (const fields of hashes) {
        for (const [field, value] of Object.entries(fields)) {
          const split = field.indexOf(':')
          const minute = Number(field.slice(0, split)) * MINUTE
          if (minute < from || minute >= to || minute + MINUTE <= oldest) continue
          const outcome = field.slice(split + 1)
          const key = `${minute} ${outcome}`
          sums.set(key, { minute, outcome, count: (sums.get(key)?.count ?? 0) + Number(value) })
        }
      }
      return [...sums.values()]
    },
  }
}
