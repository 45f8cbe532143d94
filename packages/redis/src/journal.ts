import type { Journal } from '@payhooks/core'
import type { Cluster, Redis } from 'ioredis'
import { connectionDeadline } from './connection.js'
import { journalKeys } from './journal-layout.js'
import { journalReads, LIST_SCRIPT, READ_SCRIPT } from './journal-read.js'
import { journalWriter, WRITE_SCRIPT } from './journal-write.js'
import type { RedisJournalOptions } from './types.js'
import { journalOptions } from './validations.js'

// The layout of the keys is in journal-layout.ts, the writes in journal-write.ts, the reads in journal-read.ts and,
// for the previous release's layout, journal-legacy.ts.

interface JournalCommands {
  payhooksJournalAppend(...keysThenArgs: (string | number)[]): Promise<number>
  payhooksJournalEvent(...keysThenArgs: (string | number)[]): Promise<[string[], (string | string[])[]]>
  payhooksJournalChunk(...keysThenArgs: (string | number)[]): Promise<[[string, string[]][], (string | string[])[]]>
}

/**
 * The answers of a receiver fleet on Redis (standalone, Sentinel or Cluster), for `createWebhooks({ journal })`:
 * `webhooks.events.get`, `list` and `counts` from any instance. Answers are kept in Redis Streams, one pair per shard
 * of event ids, with a small index from the event id's hash to its entries. Each batch of answers is one script call
 * (on a Cluster, one per shard, each on one slot, sent together), written off the hot path. Streams are trimmed by
 * `MINID`, other keys expire by TTL: nothing sweeps, nothing holds a lock. Takes any `ioredis` client and never
 * closes it. Reads the previous release's keys too, until they expire.
 *
 * Memory: about 120 bytes per answer with the defaults (`bench/redis-journal-storage.bench.mjs` measures it),
 * bounded by `retentionMs` and, per event, `maxAnswersPerEvent`. A batch written again (after a reply lost) keeps nothing twice.
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
  client.defineCommand('payhooksJournalAppend', { lua: WRITE_SCRIPT })
  client.defineCommand('payhooksJournalEvent', { lua: READ_SCRIPT })
  client.defineCommand('payhooksJournalChunk', { lua: LIST_SCRIPT })
  const commands = client as unknown as JournalCommands
  const { call } = connectionDeadline(client, {
    timeoutMs: commandTimeoutMs,
    caller: 'redisJournal',
    coalesceWrites: true,
  })
  const keys = journalKeys(keyPrefix, shards, retentionMs)

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

  return {
    retentionMs,
    write: journalWriter({
      keys,
      retentionMs,
      maxAnswersPerEvent,
      cluster,
      call,
      script: (...args) => commands.payhooksJournalAppend(...args),
    }),
    ...journalReads({
      client,
      keys,
      retentionMs,
      shards,
      maxAnswersPerEvent,
      call,
      batch,
      readScript: (...args) => commands.payhooksJournalEvent(...args),
      listScript: (...args) => commands.payhooksJournalChunk(...args),
    }),
  }
}
