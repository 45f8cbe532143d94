import { type JournalListQuery, type JournalMinute, type JournalRecord, journalMatches } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { decode, HOUR, type JournalKeys, MINUTE, ROUTINE } from './journal-layout.js'

/** Records read per round trip and shard while listing. */
const CHUNK = 200

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

/** What the reads need: the client, the keys, the options, and how to send. */
export interface ReadContext {
  client: Redis | Cluster
  keys: JournalKeys
  retentionMs: number
  shards: number
  call<T>(work: () => Promise<T>, what: string): Promise<T>
  batch<T>(build: (redis: Redis) => unknown, what: string): Promise<T[]>
}

/** The journal's reads: an event's records, a list newest first, counts per minute. */
export function journalReads({ client, keys: k, retentionMs, shards, call, batch }: ReadContext) {
  return {
    async answers(eventId: string): Promise<JournalRecord[]> {
      const texts = await call(
        () => client.lrange(k.eventKey(eventId), 0, -1),
        'a journal read got no reply from Redis',
      )
      const oldest = Date.now() - retentionMs
      return texts
        .map(decode)
        .filter((record) => record.at >= oldest)
        .sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1))
    },

    async list(query: JournalListQuery): Promise<JournalRecord[]> {
      const now = Date.now()
      const oldest = Math.max(now - retentionMs, query.from ?? Number.NEGATIVE_INFINITY)
      const newest = Math.min(
        query.to === undefined ? now + MINUTE : query.to - 1,
        query.after?.at ?? Number.POSITIVE_INFINITY,
      )
      const indexOf =
        query.outcome !== undefined && !ROUTINE.has(query.outcome)
          ? (hour: number, shard: number) => k.outcomeKey(query.outcome as string, hour, shard)
          : k.timeKey
      const fetch = (key: string, max: number, min: number, offset: number) =>
        call(
          () => client.zrevrangebyscore(key, max, min, 'LIMIT', offset, CHUNK),
          'a journal list got no reply from Redis',
        )
      // One round trip to the shards' hour lists finds which hour keys were written; only those are walked.
      const wanted = query.outcome !== undefined && !ROUTINE.has(query.outcome) ? `o:${query.outcome}:` : 't:'
      const written = await batch<string[]>((redis) => {
        for (let shard = 0; shard < shards; shard++) {
          redis.zrangebyscore(k.hoursKey(shard), Math.floor(oldest / HOUR), Math.floor(newest / HOUR))
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

    async counts(from: number, to: number): Promise<JournalMinute[]> {
      const oldest = Math.max(from, Date.now() - retentionMs)
      const keys: string[] = []
      for (let hour = Math.floor(oldest / HOUR); hour * HOUR < to; hour++) {
        for (let shard = 0; shard < shards; shard++) keys.push(k.countKey(hour, shard))
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
