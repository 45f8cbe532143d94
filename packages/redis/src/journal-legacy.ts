import type { JournalRecord } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { decode, HOUR, type LegacyKeys, ROUTINE } from './journal-layout.js'

// Reads of the previous release's layout (lists per event, sorted sets per hour; see `legacyKeys`), written by
// instances of that release during a rolling upgrade and kept until they expire: never written here.

/** Records read per round trip and key while listing. */
const CHUNK = 200

/** A source of records newest first by `(at, id)`: what a list merges. */
export interface Source {
  head(): Promise<JournalRecord | undefined>
  take(): void
}

/** Orders records newest first by `(at, id)`. */
export const newest = (a: JournalRecord, b: JournalRecord) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** Walks one sorted set newest first within scores [min, max], a chunk per round trip. */
class Walk implements Source {
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
      this.buffer = texts.map(decode).sort(newest)
    }
    return this.buffer[0]
  }

  take(): void {
    this.buffer.shift()
  }
}

/** The merge of `sources`, newest first. */
export class Merge implements Source {
  private heads: (JournalRecord | undefined)[] = []
  private best = -1
  constructor(private readonly sources: Source[]) {}

  async head(): Promise<JournalRecord | undefined> {
    this.heads = await Promise.all(this.sources.map((source) => source.head()))
    this.best = -1
    for (let i = 0; i < this.heads.length; i++) {
      const head = this.heads[i]
      const current = this.heads[this.best]
      if (head && (!current || newest(head, current) < 0)) this.best = i
    }
    return this.heads[this.best]
  }

  take(): void {
    this.sources[this.best]?.take()
  }
}

/** The previous layout's hour keys of a list, walked an hour at a time, newest hour first. */
class Hours implements Source {
  private current: Merge | undefined
  constructor(private readonly hours: (() => Merge)[]) {}

  async head(): Promise<JournalRecord | undefined> {
    for (;;) {
      if (!this.current) {
        const next = this.hours.shift()
        if (!next) return undefined
        this.current = next()
      }
      const head = await this.current.head()
      if (head) return head
      this.current = undefined
    }
  }

  take(): void {
    this.current?.take()
  }
}

interface LegacyContext {
  client: Redis | Cluster
  keys: LegacyKeys
  call<T>(work: () => Promise<T>, what: string): Promise<T>
}

/** The previous layout's reads. */
export function legacyReads({ client, keys: k, call }: LegacyContext) {
  return {
    answers: (eventId: string) => client.lrange(k.eventKey(eventId), 0, -1).then((texts) => texts.map(decode)),

    /** Queues on `redis` the read of the hour keys written per shard; `source` makes the list's source of them. */
    hours(redis: Redis, oldest: number, newestAt: number): void {
      for (let shard = 0; shard < k.shards; shard++) {
        redis.zrangebyscore(k.hoursKey(shard), Math.floor(oldest / HOUR), Math.floor(newestAt / HOUR))
      }
    },

    source(written: string[][], outcome: string | undefined, oldest: number, newestAt: number): Source {
      const filtered = outcome !== undefined && !ROUTINE.has(outcome)
      const wanted = filtered ? `o:${outcome}:` : 't:'
      const indexOf = filtered
        ? (hour: number, shard: number) => k.outcomeKey(outcome, hour, shard)
        : (hour: number, shard: number) => k.timeKey(hour, shard)
      const fetch = (key: string, max: number, min: number, offset: number) =>
        call(
          () => client.zrevrangebyscore(key, max, min, 'LIMIT', offset, CHUNK),
          'a journal list got no reply from Redis',
        )
      const byHour = new Map<number, string[]>()
      written.forEach((members, shard) => {
        for (const member of members) {
          if (!member.startsWith(wanted)) continue
          const hour = Number(member.slice(wanted.length))
          byHour.set(hour, [...(byHour.get(hour) ?? []), indexOf(hour, shard)])
        }
      })
      const hours = [...byHour.keys()]
        .sort((a, b) => b - a)
        .map((hour) => () => {
          const max = Math.min(newestAt, (hour + 1) * HOUR - 1)
          return new Merge((byHour.get(hour) as string[]).map((key) => new Walk(fetch, key, max, oldest)))
        })
      return new Hours(hours)
    },

    countKeys(hour: number): string[] {
      return Array.from({ length: k.shards }, (_, shard) => k.countKey(hour, shard))
    },
  }
}
