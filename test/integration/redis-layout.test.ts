// redisStore's layout 2 (issue 49) on a real Redis with its default settings: handled events are 24-byte records of
// small shared strings, one per bucket and time generation; ordering keys' marks are fields of hashes that Redis keeps
// in its compact listpack encoding; no key per event is left; a generation's keys expire whole a retention after the
// generation ends.
import { randomUUID } from 'node:crypto'
import { DEFAULT_RETENTION_MS } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
const redis = new Redis(REDIS_URL)
afterAll(() => redis.disconnect())

const EVENTS = 4000
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0')
const eventId = (n: number) => `evt_${hex(n, 8)}-7c1e-4c2a-9a8e-${hex(n * 7, 12)}`

async function handle(keyPrefix: string, ordered: boolean) {
  const store = redisStore(redis, { keyPrefix, ...UNHURRIED })
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < EVENTS) {
        const n = next++
        const position = ordered
          ? { key: `txn_${hex(n, 32)}`, at: 1_764_230_400_000 + n, eventType: 'transaction_settled' }
          : undefined
        const claim = await store.claim(eventId(n), 60_000, hex(n * 13, 32), position)
        if (claim.status !== 'claimed') throw new Error(`${eventId(n)} was ${claim.status}`)
        expect(await store.complete(eventId(n), claim.token)).toBe(true)
      }
    }),
  )
  return store
}

describe('redisStore layout 2 on Redis defaults', () => {
  it('keeps handled events as records of shared strings, ordered ones with their marks in listpack-encoded hashes, none per event', async () => {
    // Redis 7's compiled-in defaults (its redis.conf says the same): 512 fields, 64-byte values. The marks' hashes stay
    // under 128 fields, the limit of the issue and of older servers' configurations.
    expect(await redis.config('GET', 'hash-max-listpack-entries')).toEqual(['hash-max-listpack-entries', '512'])
    expect(await redis.config('GET', 'hash-max-listpack-value')).toEqual(['hash-max-listpack-value', '64'])
    for (const ordered of [false, true]) {
      const keyPrefix = `layout:${randomUUID()}:`
      const store = await handle(keyPrefix, ordered)
      const keys = await redis.keys(`${keyPrefix}*`)
      const markers = keys.filter((key) => /^[^{]*\{d\}\d+:\d+:\d+$/.test(key))
      const marks = keys.filter((key) => /\{o:\d\d\}m[0-9a-z]g[0-9a-z]+$/.test(key))
      // The marks' generations, one short string per held-keys bucket that has marks.
      const live = keys.filter((key) => /\{o:\d\d\}mn$/.test(key))
      expect(keys.sort()).toEqual([...markers, ...marks, ...live, `${keyPrefix}layout`, `${keyPrefix}{d}n`].sort())
      expect(markers.length).toBeGreaterThanOrEqual(64)
      if (ordered) expect([marks.length > 950, live.length]).toEqual([true, 64])
      else expect([...marks, ...live]).toEqual([])
      const pipeline = redis.pipeline()
      for (const key of markers) pipeline.type(key).strlen(key).pttl(key)
      for (const key of marks) pipeline.object('ENCODING', key).hlen(key).pttl(key)
      const replies = ((await pipeline.exec()) ?? []).map(([error, value]) => {
        if (error) throw error
        return value
      })
      let fields = 0
      for (let i = 0; i < replies.length; i += 3) {
        const length = replies[i + 1] as number
        if (i / 3 < markers.length) {
          // Records of 24 bytes, a few past GROW_AT at most (completes of claims that read the counts before a level
          // was added).
          expect([replies[i], length % 24]).toEqual(['string', 0])
          expect(length / 24).toBeLessThanOrEqual(149 + 16)
          fields += length / 24
        } else {
          expect(replies[i]).toBe('listpack')
          expect(length).toBeLessThanOrEqual(128)
          fields += length
        }
        const ttl = replies[i + 2] as number
        expect(ttl).toBeGreaterThan(DEFAULT_RETENTION_MS - 60_000)
        expect(ttl).toBeLessThanOrEqual(DEFAULT_RETENTION_MS * 1.25 + 60_000)
      }
      expect(fields).toBe(ordered ? 2 * EVENTS : EVENTS)
      // Every event is a duplicate now, its digest answered; an ordered one's mark answered as the key's newest.
      expect(await store.claim(eventId(17), 60_000, hex(17 * 13, 32))).toEqual({
        status: 'done',
        digest: hex(17 * 13, 32),
      })
      if (ordered) {
        const late = await store.claim('evt_late', 60_000, undefined, {
          key: `txn_${hex(17, 32)}`,
          at: 1,
          eventType: 'transaction_returned',
        })
        expect(late).toMatchObject({
          status: 'claimed',
          newest: { at: 1_764_230_400_017, eventType: 'transaction_settled', eventId: eventId(17) },
        })
      }
    }
  }, 180_000)
})

describe('redisStore layout 2: bucket counts that follow the traffic', () => {
  /** The done-marker strings of a prefix, by generation and bucket count: `<prefix>{d}<gen>:<count>:<bucket>`. */
  const markerHashes = async (keyPrefix: string) =>
    (await redis.keys(`${keyPrefix}{d}*:*:*`)).map((key) => {
      const [gen, count] = key
        .slice(keyPrefix.length + 3)
        .split(':')
        .map(Number) as [number, number]
      return { key, gen, count }
    })

  it('adds levels of four times the buckets as a generation fills: every string of whole records, every marker found', async () => {
    const keyPrefix = `grow:${randomUUID()}:`
    const count = 5000
    // A generation's first bucket count of 1 (the tests' option) makes it grow within a few thousand events.
    const store = redisStore(redis, { keyPrefix, minBuckets: 1, ...UNHURRIED } as Parameters<typeof redisStore>[1])
    let next = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          const n = next++
          const claim = await store.claim(eventId(n), 60_000, hex(n * 13, 32))
          if (claim.status !== 'claimed') throw new Error(`${eventId(n)} was ${claim.status}`)
          expect(await store.complete(eventId(n), claim.token)).toBe(true)
        }
      }),
    )
    const hashes = await markerHashes(keyPrefix)
    const levels = [...new Set(hashes.map((hash) => hash.count))].sort((a, b) => a - b)
    expect(levels.slice(0, 4)).toEqual([1, 4, 16, 64])
    const pipeline = redis.pipeline()
    for (const { key } of hashes) pipeline.strlen(key)
    const replies = ((await pipeline.exec()) ?? []).map(([error, value]) => {
      if (error) throw error
      return value as number
    })
    let fields = 0
    for (const length of replies) {
      expect(length % 24).toBe(0)
      expect(length / 24).toBeLessThanOrEqual(149 + 16)
      fields += length / 24
    }
    expect(fields).toBe(count)
    // Every level stays readable: each event is a duplicate, its digest answered.
    next = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < count) {
          const n = next++
          expect(await store.claim(eventId(n), 60_000, hex(n * 13, 32))).toEqual({
            status: 'done',
            digest: hex(n * 13, 32),
          })
        }
      }),
    )
  }, 120_000)

  it("starts a generation with the previous one's top bucket count, a quarter of it when it stayed nearly empty", async () => {
    for (const [levels, expected] of [
      [1, 256],
      [0, 64],
    ] as const) {
      const keyPrefix = `start:${randomUUID()}:`
      const store = redisStore(redis, { keyPrefix, ...UNHURRIED })
      const first = await store.claim('evt_first', 60_000)
      if (first.status !== 'claimed') throw new Error(`evt_first was ${first.status}`)
      expect(await store.complete('evt_first', first.token)).toBe(true)
      const [{ gen }] = (await markerHashes(keyPrefix)) as [{ key: string; gen: number; count: number }]
      // The previous generation ended with 256 buckets: having grown into them, or not (its bucket 0 is empty).
      const counts = Buffer.alloc(8)
      counts.writeUInt32BE(gen - 1, 0)
      counts.writeUInt32BE(256 * 16 + levels, 4)
      await redis.set(`${keyPrefix}{d}n`, counts)
      await redis.del(...(await markerHashes(keyPrefix)).map((hash) => hash.key))
      const claim = await store.claim('evt_second', 60_000)
      if (claim.status !== 'claimed') throw new Error(`evt_second was ${claim.status}`)
      expect(await store.complete('evt_second', claim.token)).toBe(true)
      expect((await markerHashes(keyPrefix)).map((hash) => [hash.gen, hash.count])).toEqual([[gen, expected]])
      expect(await store.claim('evt_second', 60_000)).toEqual({ status: 'done' })
    }
  })
})
