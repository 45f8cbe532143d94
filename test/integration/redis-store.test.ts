import { randomUUID } from 'node:crypto'
import { createWebhooks, DEFAULT_RETENTION_MS, StoreError, type WebhookError, type WebhookStore } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { signedDelivery } from '@payhooks/testing'
import { Redis, type RedisOptions } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { settledBody } from '../../packages/core/src/test-helpers/index.js'
import { inOneWrite } from '../../packages/redis/src/batch.js'
import { type OwnRedis, ownRedis } from '../fixtures/own-redis.js'
import { countRoundTrips } from '../fixtures/redis-round-trips.mjs'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
const HOUR = 60 * 60 * 1000
const clients: Redis[] = []
const servers: OwnRedis[] = []

function connect(url = REDIS_URL!, options: RedisOptions = {}): Redis {
  const client = new Redis(url, options)
  client.on('error', () => {}) // connection errors are expected in the outage tests
  clients.push(client)
  return client
}

const uniquePrefix = () => `payhooks-test:${randomUUID()}:`
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function startOwnRedis(persistent = false): Promise<OwnRedis> {
  const own = await ownRedis({ persistent })
  servers.push(own)
  await own.start()
  return own
}

/** Resolves once `client` is connected, or rejects after a bounded wait. */
async function ready(client: Redis): Promise<void> {
  for (let i = 0; i < 200 && client.status !== 'ready'; i++) await sleep(50)
  if (client.status !== 'ready') throw new Error(`client still ${client.status}`)
}

beforeAll(() => {
  if (!REDIS_URL) {
    throw new Error(
      'REDIS_URL is not set: run the Redis tests through `pnpm test` (node scripts/test.mjs), which starts redis-server',
    )
  }
})

afterAll(async () => {
  for (const client of clients) client.disconnect()
  for (const server of servers) await server.dispose()
})

// Claim atomicity across instances and lease expiry: the store contract (store-contract.test.ts).
describe('redisStore on a real Redis', () => {
  it('claims an event for one owner: others see processing, only the owner token completes', async () => {
    const keyPrefix = uniquePrefix()
    const redis = connect()
    const instanceA = redisStore(connect(), { ...UNHURRIED, keyPrefix })
    const instanceB = redisStore(connect(), { ...UNHURRIED, keyPrefix })

    const first = await instanceA.claim('evt_1', 60_000)
    expect(first.status).toBe('claimed')
    const token = first.status === 'claimed' ? first.token : ''

    const second = await instanceB.claim('evt_1', 60_000)
    expect(second.status).toBe('processing')
    const retryAfterMs = second.status === 'processing' ? second.retryAfterMs : undefined
    expect(retryAfterMs).toBeGreaterThan(0)
    expect(retryAfterMs).toBeLessThanOrEqual(60_000)

    expect(await instanceB.complete('evt_1', `${token}x`)).toBe(false)
    expect(await instanceB.release('evt_1', `${token}x`)).toBe(false)
    expect(await redis.get(`${keyPrefix}evt_1`)).toBe(token)

    expect(await instanceB.complete('evt_1', token)).toBe(true)
    // Handled: a field of its generation's hash (redis-layout.test.ts); the event's own key went with the claim.
    expect(await redis.exists(`${keyPrefix}evt_1`)).toBe(0)
    expect(await instanceA.claim('evt_1', 60_000)).toEqual({ status: 'done' })
    expect(await instanceA.complete('evt_1', token)).toBe(false)
    expect(await instanceA.release('evt_1', token)).toBe(false)
    expect(await instanceB.claim('evt_1', 60_000)).toEqual({ status: 'done' })
  })

  it('release frees the event for the next delivery and retires the old token', async () => {
    const keyPrefix = uniquePrefix()
    const redis = connect()
    const store = redisStore(connect(), { ...UNHURRIED, keyPrefix })

    const first = await store.claim('evt_2', 60_000)
    if (first.status !== 'claimed') throw new Error(`expected a claim, got ${first.status}`)
    expect(await store.release('evt_2', first.token)).toBe(true)
    expect(await redis.exists(`${keyPrefix}evt_2`)).toBe(0)
    expect(await store.release('evt_2', first.token)).toBe(false)

    const second = await store.claim('evt_2', 60_000)
    if (second.status !== 'claimed') throw new Error(`expected a claim, got ${second.status}`)
    expect(second.token).not.toBe(first.token)
    expect(await store.complete('evt_2', first.token)).toBe(false)
    expect(await store.complete('evt_2', second.token)).toBe(true)
  })

  it('keeps the done marker for retentionMs (73 hours by default, or the configured value), and up to a quarter more', async () => {
    const keyPrefix = uniquePrefix()
    const redis = connect()
    const byDefault = redisStore(redis, { ...UNHURRIED, keyPrefix })
    const longer = redisStore(redis, { ...UNHURRIED, keyPrefix: `${keyPrefix}long:`, retentionMs: 100 * HOUR })

    for (const [store, prefix, retention] of [
      [byDefault, keyPrefix, DEFAULT_RETENTION_MS],
      [longer, `${keyPrefix}long:`, 100 * HOUR],
    ] as const) {
      const claim = await store.claim('evt_4', 60_000)
      if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`)
      expect(await redis.pttl(`${prefix}evt_4`)).toBeLessThanOrEqual(60_000)
      expect(await store.complete('evt_4', claim.token)).toBe(true)
      const [marker] = (await redis.keys(`${prefix}{d}*:*:*`)) as [string]
      const pttl = await redis.pttl(marker)
      expect(pttl).toBeLessThanOrEqual(retention * 1.25)
      expect(pttl).toBeGreaterThan(retention - 60_000)
    }
    expect(DEFAULT_RETENTION_MS).toBe(73 * HOUR)
  })

  it('connects a lazyConnect client on first use', async () => {
    const client = connect(REDIS_URL, { lazyConnect: true })
    const store = redisStore(client, { ...UNHURRIED, keyPrefix: uniquePrefix() })
    expect(client.status).toBe('wait')
    expect((await store.claim('evt_lazy', 60_000)).status).toBe('claimed')
  })

  it('isolates fleets by keyPrefix: a claim is a key of its own under the prefix', async () => {
    const redis = connect()
    const prefixA = uniquePrefix()
    const prefixB = uniquePrefix()
    const storeA = redisStore(redis, { ...UNHURRIED, keyPrefix: prefixA })
    const storeB = redisStore(redis, { ...UNHURRIED, keyPrefix: prefixB })
    expect((await storeA.claim('evt_5', 60_000)).status).toBe('claimed')
    expect((await storeB.claim('evt_5', 60_000)).status).toBe('claimed')
    expect(await redis.exists(`${prefixA}evt_5`, `${prefixB}evt_5`)).toBe(2)
    expect((await redis.keys(`${prefixA}*`)).sort()).toEqual([`${prefixA}evt_5`, `${prefixA}layout`])
  })

  it('an ordered event costs two round trips, as an unordered one: its fence goes with the claim and the done marker (issues 40, 49)', async () => {
    const keyPrefix = uniquePrefix()
    const client = connect()
    const store = redisStore(client, { ...UNHURRIED, keyPrefix })
    const trips = countRoundTrips(client)
    const handle = async (eventId: string, key?: string) => {
      const position = key && { key, at: 1_764_000_000_000, eventType: 'transaction_settled' }
      const claim = await store.claim(eventId, 60_000, 'ab'.repeat(16), position || undefined)
      if (claim.status !== 'claimed') throw new Error(`${eventId} was ${claim.status}`)
      expect(await store.complete(eventId, claim.token)).toBe(true)
    }
    // Loads the scripts (a first EVALSHA answers NOSCRIPT) and this process's copy of the marker counts.
    await handle('evt_warm', 'txn_warm')
    await handle('evt_warm_unordered')
    trips.take()
    for (let i = 0; i < 10; i++) await handle(`evt_ordered_${i}`, `txn_${i}`)
    const ordered = trips.take()
    // The unordered claim is a pipeline (SET NX, the counts, the marker's hash): one round trip.
    for (let i = 0; i < 10; i++) await handle(`evt_unordered_${i}`)
    const unordered = trips.take()
    console.info(`[round trips, standalone] ordered: ${ordered / 10}, unordered: ${unordered / 10} per event`)
    // Its one write is a corked batch, not an ioredis Pipeline (whose constructor copies every script defined on the
    // client: it doubled a claim's client CPU).
    const pipeline = client.pipeline.bind(client)
    let pipelines = 0
    client.pipeline = ((...args: Parameters<typeof pipeline>) => {
      pipelines++
      return pipeline(...args)
    }) as typeof client.pipeline
    try {
      await handle('evt_unordered_batch')
    } finally {
      client.pipeline = pipeline
    }
    expect(trips.take()).toBe(2)
    expect(pipelines).toBe(0)
    expect(ordered).toBe(2 * 10)
    expect(unordered).toBe(2 * 10)
    // The fence was taken and freed: a second event of a key claims it at once, and the mark moved.
    const again = await store.claim('evt_ordered_again', 60_000, undefined, {
      key: 'txn_3',
      at: 1_764_000_000_001,
      eventType: 'transaction_returned',
    })
    expect(again).toMatchObject({ status: 'claimed', newest: { eventId: 'evt_ordered_3' } })
  })

  it('the steps of events in flight in one turn of the event loop leave in one write, each answered as alone (issue 49)', async () => {
    const keyPrefix = uniquePrefix()
    const client = connect()
    const store = redisStore(client, { ...UNHURRIED, keyPrefix })
    const digest = 'ab'.repeat(16)
    const position = (i: number) =>
      i % 2 === 0 ? undefined : { key: `txn_${keyPrefix}${i}`, at: 1_764_000_000_000, eventType: 'transaction_settled' }
    // Loads the functions and this process's copy of the marker counts (a stale copy costs a claim a second read).
    await store.init?.()
    for (const i of [0, 1]) {
      const warm = await store.claim(`evt_warm_${i}`, 60_000, digest, position(i))
      if (warm.status === 'claimed') await store.complete(`evt_warm_${i}`, warm.token)
    }
    const trips = countRoundTrips(client)
    // Anything the warm-up left going (a library load, a release) has gone before the count starts.
    await client.ping()
    await new Promise((resolve) => setTimeout(resolve, 100))
    trips.take()
    // The commands sent while the claims run, for the message should their writes not be one.
    const sent: string[] = []
    const send = client.sendCommand.bind(client)
    client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name)
      return (send as (...args: unknown[]) => unknown)(command, ...rest)
    }) as typeof client.sendCommand
    const ids = Array.from({ length: 20 }, (_, i) => `evt_turn_${i}`)
    // Each claim in a callback of its own, as a receiver's requests are: immediates queued together run in one turn
    // (timers can straddle a millisecond and fall in two).
    const claims = await Promise.all(
      ids.map(
        (id, i) =>
          new Promise<Awaited<ReturnType<typeof store.claim>>>((resolve, reject) => {
            setImmediate(() => Promise.resolve(store.claim(id, 60_000, digest, position(i))).then(resolve, reject))
          }),
      ),
    )
    const claimWrites = trips.take()
    client.sendCommand = send
    expect(claims.map((claim) => claim.status)).toEqual(ids.map(() => 'claimed'))
    const tokens = claims.map((claim) => (claim.status === 'claimed' ? claim.token : ''))
    // Completions started together, as after one read of replies.
    const completed = await Promise.all(ids.map((id, i) => store.complete(id, tokens[i] as string)))
    const completeWrites = trips.take()
    expect(completed).toEqual(ids.map(() => true))
    const again = await Promise.all(ids.map((id, i) => store.claim(id, 60_000, digest, position(i))))
    trips.take()
    expect(again.map((claim) => claim.status)).toEqual(ids.map(() => 'done'))
    console.info(`[writes, 20 events in one turn] claims: ${claimWrites}, completions: ${completeWrites}`)
    expect(claimWrites, `writes of the claims, whose commands were ${sent.join(' ')}`).toBe(1)
    expect(completeWrites).toBe(1)
    // An event alone: one write a step, as before.
    const alone = await store.claim('evt_alone', 60_000, digest)
    expect(trips.take()).toBe(1)
    if (alone.status !== 'claimed') throw new Error(`evt_alone was ${alone.status}`)
    expect(await store.complete('evt_alone', alone.token)).toBe(true)
    expect(trips.take()).toBe(1)
    // A test's fake timers do not keep the socket held: it is let go by Node's own setImmediate.
    vi.useFakeTimers({ toFake: ['setImmediate'] })
    try {
      expect((await store.claim('evt_fake_timers', 60_000, digest)).status).toBe('claimed')
    } finally {
      vi.useRealTimers()
    }
  })
})

describe('inOneWrite, the claim batch (issue 49)', () => {
  it('answers each command its reply or error in order, on a ready client and on one still connecting', async () => {
    const admin = connect()
    const ready = connect()
    await ready.ping()
    const connecting = connect(REDIS_URL!, { lazyConnect: true })
    for (const client of [ready, connecting]) {
      const key = `${uniquePrefix()}batch`
      await admin.hset(`${key}:hash`, 'f', 'v')
      const trips = countRoundTrips(client)
      expect(client.status).toBe(client === ready ? 'ready' : 'wait')
      const replies = await inOneWrite(client, [
        ['set', key, 'token', 'PX', 60_000, 'NX'],
        ['hgetBuffer', key, 'f'],
        ['getBuffer', key],
        ['hgetBuffer', `${key}:hash`, 'f'],
      ])
      // (the one still connecting also sends its handshake first: INFO, CLIENT SETINFO)
      if (client === ready) expect(trips.take()).toBe(1)
      expect(replies?.map(([error]) => error?.message.split(' ')[0] ?? null)).toEqual([null, 'WRONGTYPE', null, null])
      expect(replies?.map(([, value]) => (Buffer.isBuffer(value) ? value.toString() : value))).toEqual([
        'OK',
        undefined,
        'token',
        'v',
      ])
    }
  })
})

describe('redisStore when Redis is down or slow (own redis-server)', () => {
  it('rejects quickly while Redis is stopped, leaves nothing queued, and recovers when Redis is back', async () => {
    const server = await startOwnRedis()
    const keyPrefix = uniquePrefix()
    const client = connect(server.url, { retryStrategy: () => 100 })
    const store = redisStore(client, { keyPrefix, commandTimeoutMs: 300 })
    // Claimed again until claimed: a fresh store's first calls (its layout read, its scripts loaded) may take past
    // 300 ms on a loaded machine, and a claim given up on is dropped once Redis answers.
    const before = await vi.waitFor(
      async () => {
        const claim = await store.claim('evt_before', 60_000)
        if (claim.status !== 'claimed') throw new Error(`expected a claim, got ${claim.status}`)
        return claim
      },
      { timeout: 10_000, interval: 50 },
    )

    await server.stop()
    for (let i = 0; i < 500 && client.status === 'ready'; i++) await sleep(20)
    await expect(store.claim('evt_down', 60_000)).rejects.toThrow(/not ready within 300 ms/)
    await expect(store.complete('evt_before', before.token)).rejects.toThrow(/not ready/)
    await expect(store.release('evt_before', before.token)).rejects.toThrow(/not ready/)

    await server.start()
    await ready(client)
    // Anything ioredis had queued while offline is flushed before 'ready'; these run after it.
    expect(await client.get(`${keyPrefix}evt_down`)).toBeNull()
    // No step of the store's either way: neither a script nor a function of its library.
    expect(await client.info('commandstats')).not.toMatch(/cmdstat_(eval|fcall)/)
    expect((await store.claim('evt_down', 60_000)).status).toBe('claimed')
  })

  it('a claim that times out on a stalled Redis rejects, and its lease is dropped once Redis answers', async () => {
    const server = await startOwnRedis()
    const keyPrefix = uniquePrefix()
    const admin = connect(server.url)
    const client = connect(server.url)
    const store = redisStore(client, { keyPrefix, commandTimeoutMs: 300 })
    await Promise.all([ready(admin), ready(client)])

    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL')
    await expect(store.claim('evt_slow', 60_000)).rejects.toThrow(/no reply/)
    // Same connection, so this PING is answered after the stalled claim and the store's release ran.
    await client.ping()
    expect(await admin.get(`${keyPrefix}evt_slow`)).toBeNull()
    expect((await store.claim('evt_slow', 60_000)).status).toBe('claimed')
  })

  it('a receiver answers 503 while Redis is stopped and processes the same delivery after the restart', async () => {
    const server = await startOwnRedis(true)
    const secret = 'whsec_redis_store_test'
    const client = connect(server.url)
    const store: WebhookStore = redisStore(client, { keyPrefix: uniquePrefix(), commandTimeoutMs: 500 })
    const errors: WebhookError[] = []
    const handled = new Map<string, number>()
    const webhooks = createWebhooks({ secret, store })
      .onAny((event) => {
        handled.set(event.event_id, (handled.get(event.event_id) ?? 0) + 1)
      })
      .onError((error) => errors.push(error))
    const deliver = async (eventId: string) => {
      const { body, headers } = await signedDelivery(settledBody(eventId), secret)
      const result = await webhooks.receive({
        method: 'POST',
        body,
        getHeader: (name) => (headers as Record<string, string>)[name],
      })
      return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
    }

    // As the service does: again after a 503 or 409 (a fresh store's first calls, or any call, may take longer than
    // commandTimeoutMs on a loaded machine; a claim given up on is dropped once Redis answers), until answered.
    const deliverUntilAnswered = async (eventId: string) => {
      let answer = await deliver(eventId)
      for (let i = 0; i < 100 && (answer.status === 503 || answer.status === 409); i++) {
        await sleep(100)
        answer = await deliver(eventId)
      }
      return answer
    }

    expect(await deliverUntilAnswered('evt_early')).toMatchObject({ status: 200, body: { status: 'processed' } })
    errors.length = 0

    await server.stop()
    for (const eventId of ['evt_late', 'evt_late', 'evt_early']) {
      expect(await deliver(eventId)).toMatchObject({ status: 503, body: { error: 'store_unavailable' } })
    }
    expect(handled.get('evt_late')).toBeUndefined()
    expect(errors).toHaveLength(3)
    for (const error of errors) expect(error).toBeInstanceOf(StoreError)
    expect(errors.map((error) => error.eventId)).toEqual(['evt_late', 'evt_late', 'evt_early'])

    await server.start()
    expect(await deliverUntilAnswered('evt_late')).toMatchObject({ status: 200, body: { status: 'processed' } })
    expect(await deliverUntilAnswered('evt_late')).toMatchObject({ status: 200, body: { status: 'duplicate' } })
    // The done marker written before the outage survived it (append-only file), so no second run.
    expect(await deliverUntilAnswered('evt_early')).toMatchObject({ status: 200, body: { status: 'duplicate' } })
    expect(Object.fromEntries(handled)).toEqual({ evt_early: 1, evt_late: 1 })
    expect(errors.every((error) => error instanceof StoreError)).toBe(true)
  })
})
