import type { JournalRecord } from '@payhooks/core'
import type { Redis } from 'ioredis'
import { encode, HOUR, type JournalKeys, MINUTE, ROUTINE } from './journal-layout.js'

// A batch's writes in one script (standalone Redis). ARGV: now, retention, answers kept per event, the hour below which
// a shard's hour list drops members, then the records, one a line (a JSON text holds no raw line break): "e t c h o
// <text>", the KEYS indices of its event list, hour index, hour counts, shard's hour list and outcome index (0: none;
// t = 0 when the hour has expired: nothing of it is written), then its text. One argument for the whole batch: per
// argument the client's encoding costs more than the bytes. The script reads time, outcome and copies from the text,
// derives expiries and count fields, and writes each count, expiry and hour member once per key. A record already in
// its hour index (the batch written again) is skipped.
export const WRITE_SCRIPT = `
local now, retention, keep, oldest = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local newest, expires, counts, hours = {}, {}, {}, {}
local records, from, n = ARGV[5], 1, 0
while from <= #records do
  local stop = string.find(records, '\\n', from, true)
  local line = string.sub(records, from, (stop or 0) - 1)
  from = (stop or #records) + 1
  local e, t, c, h, o, text = string.match(line, '^(%d+) (%d+) (%d+) (%d+) (%d+) (.*)$')
  t = tonumber(t)
  local record = cjson.decode(text)
  local at, outcome, copies = record[2], record[7], record[12]
  if type(copies) ~= 'number' then copies = 1 end
  if t > 0 and redis.call('ZADD', KEYS[t], at, text) == 1 then
    n = n + 1
    local key = KEYS[tonumber(e)]
    redis.call('RPUSH', key, text)
    if (newest[key] or 0) < at then newest[key] = at end
    local hour = math.floor(at / ${HOUR})
    local expireAt = (hour + 1) * ${HOUR} + retention
    c, h, o = tonumber(c), tonumber(h), tonumber(o)
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
    fields[field] = (fields[field] or 0) + copies
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

/** What the writers need: the keys, the options, and how to send (each call bounded by `commandTimeoutMs`). */
export interface WriteContext {
  keys: JournalKeys
  retentionMs: number
  shards: number
  maxAnswersPerEvent: number
  call<T>(work: () => Promise<T>, what: string): Promise<T>
  batch<T>(build: (redis: Redis) => unknown, what: string): Promise<T[]>
  script(...keysThenArgs: (string | number)[]): Promise<number>
}

/**
 * Standalone Redis: the batch in one script call (see WRITE_SCRIPT). Each record is encoded once, on a line with its
 * route; the script derives expiries and count fields, so the work here per record is a key, a route and a text.
 */
export function scriptWriter(context: WriteContext) {
  const { keys: k, retentionMs, shards, maxAnswersPerEvent } = context
  return async (records: readonly JournalRecord[]): Promise<void> => {
    const now = Date.now()
    const keys: string[] = []
    const lines: string[] = []
    /** Per hour and shard, the KEYS indices "t c h" of its index, its counts and the shard's hour list. */
    const buckets = new Map<number, string>()
    const outcomes = new Map<string, number>()
    for (const record of records) {
      const { eventId, outcome } = record
      const e = keys.push(k.eventKey(eventId))
      const hour = Math.floor(record.at / HOUR)
      let route: string
      if ((hour + 1) * HOUR + retentionMs <= now) route = `${e} 0 0 0 0`
      else {
        const shard = k.shardOf(eventId)
        let bucket = buckets.get(hour * shards + shard)
        if (bucket === undefined) {
          bucket = `${keys.push(k.timeKey(hour, shard))} ${keys.push(k.countKey(hour, shard))} ${keys.push(k.hoursKey(shard))}`
          buckets.set(hour * shards + shard, bucket)
        }
        let o = 0
        if (!ROUTINE.has(outcome)) {
          const key = k.outcomeKey(outcome, hour, shard)
          o = outcomes.get(key) ?? keys.push(key)
          outcomes.set(key, o)
        }
        route = `${e} ${bucket} ${o}`
      }
      lines.push(`${route} ${encode(record)}`)
    }
    // One command for the whole batch: the cost per answer of a command of its own would be the journal's cost.
    await context.call(
      () =>
        context.script(keys.length, ...keys, now, retentionMs, maxAnswersPerEvent, k.oldestHour(now), lines.join('\n')),
      'a journal write got no reply from Redis',
    )
  }
}

/**
 * A Cluster: the keys live on many slots, so the script's steps go out as plain commands, sent together: first each
 * record into its hour index (its reply says whether it is new), then the rest of the new ones.
 */
export function commandWriter(context: WriteContext) {
  const { keys: k, retentionMs, maxAnswersPerEvent } = context
  return async (records: readonly JournalRecord[]): Promise<void> => {
    const now = Date.now()
    const live = records
      .filter((record) => (Math.floor(record.at / HOUR) + 1) * HOUR + retentionMs > now)
      .map((record) => ({ record, text: encode(record), hour: Math.floor(record.at / HOUR) }))
    if (live.length === 0) return
    const added = await context.batch<number>((redis) => {
      for (const { record, text, hour } of live) redis.zadd(k.timeKey(hour, k.shardOf(record.eventId)), record.at, text)
    }, 'a journal write')
    const byEvent = new Map<string, { newest: number; texts: string[] }>()
    const byIndex = new Map<string, { expireAt: number; members: (string | number)[] }>()
    const counts = new Map<string, { expireAt: number; fields: Map<string, number> }>()
    const hours = new Map<number, Map<string, number>>()
    live.forEach(({ record, text, hour }, i) => {
      const shard = k.shardOf(record.eventId)
      const expireAt = (hour + 1) * HOUR + retentionMs
      const written = hours.get(shard) ?? new Map<string, number>()
      hours.set(shard, written.set(`t:${hour}`, hour))
      const time = byIndex.get(k.timeKey(hour, shard)) ?? { expireAt, members: [] }
      byIndex.set(k.timeKey(hour, shard), time)
      if (added[i] !== 1) return
      const event = byEvent.get(record.eventId)
      if (event) {
        event.texts.push(text)
        event.newest = Math.max(event.newest, record.at)
      } else byEvent.set(record.eventId, { newest: record.at, texts: [text] })
      if (!ROUTINE.has(record.outcome)) {
        const key = k.outcomeKey(record.outcome, hour, shard)
        const index = byIndex.get(key) ?? { expireAt, members: [] }
        index.members.push(record.at, text)
        byIndex.set(key, index)
        written.set(`o:${record.outcome}:${hour}`, hour)
      }
      const key = k.countKey(hour, shard)
      const count = counts.get(key) ?? { expireAt, fields: new Map<string, number>() }
      const field = `${Math.floor(record.at / MINUTE)}:${record.outcome}`
      count.fields.set(field, (count.fields.get(field) ?? 0) + (record.copies ?? 1))
      counts.set(key, count)
    })
    await context.batch((redis) => {
      for (const [eventId, { newest, texts }] of byEvent) {
        const key = k.eventKey(eventId)
        const ttl = newest + retentionMs - now
        if (ttl <= 0) redis.del(key)
        else {
          redis.rpush(key, ...texts)
          redis.ltrim(key, -maxAnswersPerEvent, -1)
          redis.pexpire(key, ttl)
        }
      }
      for (const [key, { expireAt, members }] of byIndex) {
        if (members.length > 0) redis.zadd(key, ...members)
        redis.pexpireat(key, expireAt)
      }
      for (const [key, { expireAt, fields }] of counts) {
        for (const [field, n] of fields) redis.hincrby(key, field, n)
        redis.pexpireat(key, expireAt)
      }
      for (const [shard, written] of hours) {
        const key = k.hoursKey(shard)
        redis.zadd(key, ...[...written].flatMap(([member, hour]) => [hour, member]))
        redis.zremrangebyscore(key, '-inf', k.oldestHour(now))
        redis.pexpire(key, retentionMs + 2 * HOUR)
      }
    }, 'a journal write')
  }
}
