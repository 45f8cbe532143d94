import { type JournalListQuery, type JournalMinute, type JournalRecord, journalMatches } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import {
  addDictionaries,
  type Dictionaries,
  decodeEntry,
  HOUR,
  type JournalKeys,
  MINUTE,
  ROUTINE,
} from './journal-layout.js'
import { legacyReads, Merge, newest, type Source } from './journal-legacy.js'

/** The most entries read per round trip and stream while listing; the first reads take fewer, then 4 times more. */
const CHUNK = 200

/** Lua: adds to `dictionaries` (hour, its fields flat) the dictionary of the hour of entry id `entry`. */
const DICTIONARY = `
local seen = {}
local function dictionary(base, entry, dictionaries)
  local hour = math.floor(tonumber(string.match(entry, '^(%d+)')) / ${HOUR})
  if seen[hour] then return end
  seen[hour] = true
  dictionaries[#dictionaries + 1] = tostring(hour)
  dictionaries[#dictionaries + 1] = redis.call('HGETALL', base .. 'd:' .. hour)
end`

// An event's entries, in one call on its shard's slot. KEYS: the shard's meta hash. ARGV: the event's index hash, the
// oldest hour kept. Returns entry id and text pairs, in no order (the reader sorts and filters them by event id), and
// the dictionaries of their hours.
export const READ_SCRIPT = `${DICTIONARY}
local meta, hash, oldest = KEYS[1], ARGV[1], tonumber(ARGV[2])
local base = string.sub(meta, 1, -2)
local n = tonumber(hash)
local fields = redis.call('HGETALL', meta)
local out, dictionaries = {}, {}
for i = 1, #fields, 2 do
  local name = fields[i]
  local hour = tonumber(string.sub(name, 2))
  if string.sub(name, 1, 1) == 'b' and hour >= oldest then
    for size in string.gmatch(fields[i + 1], '%d+') do
      local value = redis.call('HGET', base .. 'i:' .. hour .. ':' .. size .. ':' .. (n % tonumber(size)), hash)
      if value then
        for ref in string.gmatch(value, '[^,]+') do
          local kind, off, seq = string.match(ref, '^(%a)(%w+)%-?(%w*)$')
          local entry = string.format('%.0f', hour * ${HOUR} + tonumber(off, 36)) .. '-' .. (seq == '' and '0' or tonumber(seq, 36))
          local found = redis.call('XRANGE', base .. kind, entry, entry)
          if found[1] then
            out[#out + 1] = found[1][1]
            out[#out + 1] = found[1][2][2]
            dictionary(base, found[1][1], dictionaries)
          end
        end
      end
    end
  end
end
return { out, dictionaries }`

// A chunk of a stream newest first. KEYS: the stream. ARGV: from (an id, or "(" and one), down to, how many. Returns
// the entries, and the dictionaries of their hours.
export const LIST_SCRIPT = `${DICTIONARY}
local base = string.sub(KEYS[1], 1, -2)
local entries = redis.call('XREVRANGE', KEYS[1], ARGV[1], ARGV[2], 'COUNT', ARGV[3])
local dictionaries = {}
for _, entry in ipairs(entries) do dictionary(base, entry[1], dictionaries) end
return { entries, dictionaries }`

type Flat = (string | string[])[]

/**
 * Walks one stream newest first, from `top` down to `bottom` (entry ids' milliseconds). An entry's id is never before
 * its record's `at`, so once the walk has read down to `m` every record with `at > m` is read: those are given out, in
 * order, while the others wait for the walk to pass them.
 */
class StreamWalk implements Source {
  private buffer: JournalRecord[] = []
  private from: string
  private floor = Number.POSITIVE_INFINITY
  private done = false
  private readonly dictionaries: Dictionaries = new Map()
  constructor(
    private readonly fetch: (
      key: string,
      from: string,
      bottom: number,
      count: number,
    ) => Promise<[[string, string[]][], Flat]>,
    private readonly key: string,
    top: number,
    private readonly bottom: number,
    private readonly keep: (record: JournalRecord) => boolean,
    private count: number,
  ) {
    this.from = `${top}`
  }

  async head(): Promise<JournalRecord | undefined> {
    while (!this.done && !((this.buffer[0]?.at ?? Number.NEGATIVE_INFINITY) > this.floor)) {
      const [entries, dictionaries] = await this.fetch(this.key, this.from, this.bottom, this.count)
      addDictionaries(this.dictionaries, dictionaries)
      if (entries.length < this.count) this.done = true
      this.count = Math.min(CHUNK, this.count * 4)
      const last = entries[entries.length - 1]
      if (last) {
        this.from = `(${last[0]}`
        this.floor = Number(last[0].slice(0, last[0].indexOf('-')))
      }
      const records = entries
        .map(([id, fields]) => decodeEntry(id, fields[1] as string, this.dictionaries))
        .filter(this.keep)
      if (records.length > 0) this.buffer = [...this.buffer, ...records].sort(newest)
    }
    return this.buffer[0]
  }

  take(): void {
    this.buffer.shift()
  }
}

/** What the reads need: the client, the keys, the options, and how to send. */
export interface ReadContext {
  client: Redis | Cluster
  keys: JournalKeys
  retentionMs: number
  shards: number
  maxAnswersPerEvent: number
  call<T>(work: () => Promise<T>, what: string): Promise<T>
  batch<T>(build: (redis: Redis) => unknown, what: string): Promise<T[]>
  readScript(...keysThenArgs: (string | number)[]): Promise<[string[], Flat]>
  listScript(...keysThenArgs: (string | number)[]): Promise<[[string, string[]][], Flat]>
}

/**
 * How far above `newestAt` a walk of a shard starts: the highest entry id that may hold a record at or before it,
 * from the shard's late hash (per hour of entry ids, the most an id ran ahead of its `at`).
 */
function topOf(late: Record<string, string>, newestAt: number): number {
  let top = newestAt
  for (const [field, value] of Object.entries(late)) {
    const hour = Number(field.slice(1))
    const ahead = Number(value)
    if (hour * HOUR <= newestAt + ahead) top = Math.max(top, Math.min((hour + 1) * HOUR - 1, newestAt + ahead))
  }
  return top
}

/** The journal's reads: an event's records, a list newest first, counts per minute. */
export function journalReads(context: ReadContext) {
  const { client, keys: k, retentionMs, shards, maxAnswersPerEvent, call, batch } = context
  const legacy = legacyReads({ client, keys: k.legacy, call })
  return {
    async answers(eventId: string): Promise<JournalRecord[]> {
      const now = Date.now()
      const [[flat, dictionaries], old] = await call(
        () =>
          Promise.all([
            context.readScript(1, k.metaKey(k.shardOf(eventId)), k.indexHash(eventId), k.oldestHour(now)),
            legacy.answers(eventId),
          ]),
        'a journal read got no reply from Redis',
      )
      const records = [...old]
      const codes = addDictionaries(new Map(), dictionaries)
      for (let i = 0; i < flat.length; i += 2)
        records.push(decodeEntry(flat[i] as string, flat[i + 1] as string, codes))
      const oldest = now - retentionMs
      return records
        .filter((record) => record.eventId === eventId && record.at >= oldest)
        .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1))
        .slice(-maxAnswersPerEvent)
    },

    async list(query: JournalListQuery): Promise<JournalRecord[]> {
      const now = Date.now()
      const oldest = Math.max(now - retentionMs, query.from ?? Number.NEGATIVE_INFINITY)
      const newestAt = Math.min(
        query.to === undefined ? now + MINUTE : query.to - 1,
        query.after?.at ?? Number.POSITIVE_INFINITY,
      )
      if (newestAt < oldest) return []
      // One round trip: each shard's late hash, and the hour keys the previous layout wrote.
      const replies = await batch<Record<string, string> | string[]>((redis) => {
        for (let shard = 0; shard < shards; shard++) redis.hgetall(k.lateKey(shard))
        legacy.hours(redis, oldest, newestAt)
      }, 'a journal list')
      const lates = replies.slice(0, shards) as Record<string, string>[]
      const streams: ('r' | 'n')[] =
        query.outcome === undefined ? ['r', 'n'] : ROUTINE.has(query.outcome) ? ['r'] : ['n']
      const fetch = (key: string, from: string, bottom: number, count: number) =>
        call(() => context.listScript(1, key, from, bottom, count), 'a journal list got no reply from Redis')
      const keep = (record: JournalRecord) => record.at >= oldest && record.at <= newestAt
      const sources: Source[] = []
      // A page spread evenly over the walks, twice over: most pages need one read per walk.
      const first = Math.min(CHUNK, Math.max(8, Math.ceil((2 * query.limit) / (shards * streams.length))))
      lates.forEach((late, shard) => {
        const top = topOf(late, newestAt)
        for (const stream of streams) {
          sources.push(new StreamWalk(fetch, k.streamKey(shard, stream === 'r'), top, oldest, keep, first))
        }
      })
      sources.push(legacy.source(replies.slice(shards) as string[][], query.outcome, oldest, newestAt))
      const merge = new Merge(sources)
      const found: JournalRecord[] = []
      for (;;) {
        const record = await merge.head()
        if (!record) return found
        merge.take()
        if (journalMatches(record, query)) {
          found.push(record)
          if (found.length >= query.limit) return found
        }
      }
    },

    async counts(from: number, to: number): Promise<JournalMinute[]> {
      const oldest = Math.max(from, Date.now() - retentionMs)
      const keys: string[] = []
      for (let hour = Math.floor(oldest / HOUR); hour * HOUR < to; hour++) {
        for (let shard = 0; shard < shards; shard++) keys.push(k.countKey(hour, shard))
        keys.push(...legacy.countKeys(hour))
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
