// A rolling upgrade of a Redis fleet (issue 49): instances of the previous release (layout 1, one key per handled
// event; vendored from commit ad6f70a in test/fixtures/redis-store-ad6f70a) and of this one (layout 2, shared hashes)
// on one prefix, on a standalone Redis and on a Redis Cluster. Both ways: what the old release wrote, the new one reads
// (a copy handled under layout 1 is a duplicate, an old claim in progress is respected, an old mark still orders), and
// what the new one writes during the rollout window, the old one reads; through receivers, a mixed fleet runs every
// event once and the events of an ordering key in order.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type OrderingPosition, type WebhookStore } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Cluster, Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisStore as previousStore } from '../fixtures/redis-store-ad6f70a/store.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const { REDIS_URL, REDIS_CLUSTER_NODES } = process.env
if (!REDIS_URL || !REDIS_CLUSTER_NODES) {
  throw new Error(
    'REDIS_URL and REDIS_CLUSTER_NODES are needed: run these tests through `pnpm test` (node scripts/test.mjs)',
  )
}
const nodes = REDIS_CLUSTER_NODES.split(',').map((node) => {
  const [host, port] = node.split(':')
  return { host: host as string, port: Number(port) }
})

const A = '0123456789abcdef0123456789abcdef'
const B = 'fedcba9876543210fedcba9876543210'
const LEASE = 60_000
/**
 * The rollout window of the test past it: long enough for a fresh store's first claim and completion (its layout
 * read, its scripts loaded) on a loaded machine, 5x and more; at 500 ms those could come after it.
 */
const ROLLOUT_MS = 2000
const T0 = 1_764_230_400_000
const HOUR = 3_600_000
const clients: (Redis | Cluster)[] = []
afterAll(async () => {
  // quit, not disconnect: an abrupt end rejects commands a Cluster client still holds (a slots refresh), unhandled.
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())))
})

const servers = [
  { name: 'one Redis', client: (): Redis | Cluster => new Redis(REDIS_URL) },
  {
    name: 'a Redis Cluster',
    client: (): Redis | Cluster => {
      const cluster = new Cluster(nodes)
      cluster.on('error', () => {})
      return cluster
    },
  },
]

const position = (key: string, at: number, eventType = 'transaction_settled'): OrderingPosition => ({
  key,
  at,
  eventType,
})

async function claimed(store: WebhookStore, eventId: string, digest?: string, at?: OrderingPosition) {
  const claim = await store.claim(eventId, LEASE, digest, at)
  if (claim.status !== 'claimed') throw new Error(`${eventId} was ${claim.status}`)
  return claim
}

describe.each(servers)('a rolling upgrade from the previous release (layout 1) on $name', (server) => {
  const connect = () => {
    const client = server.client()
    clients.push(client)
    return client
  }

  /** A prefix where the previous release ran first (so the new release finds layout 1 and opens its window). */
  async function upgradedFleet() {
    const keyPrefix = `upgrade:${randomUUID()}:`
    const old = previousStore(connect(), { keyPrefix, ...UNHURRIED })
    const warm = await claimed(old, 'evt_warm')
    await old.complete('evt_warm', warm.token)
    const fresh = redisStore(connect(), { keyPrefix, ...UNHURRIED })
    await fresh.init?.()
    return { keyPrefix, old, fresh }
  }

  it('the new release reads what the old one wrote: done markers, claims in progress, holds and marks', async () => {
    const { old, fresh } = await upgradedFleet()

    const handled = await claimed(old, 'evt_old_done', A)
    expect(await old.complete('evt_old_done', handled.token)).toBe(true)
    expect(await fresh.claim('evt_old_done', LEASE, A)).toEqual({ status: 'done', digest: A })
    expect(await fresh.claim('evt_old_done', LEASE, B)).toEqual({ status: 'done', digest: A })

    const running = await claimed(old, 'evt_old_running', A)
    expect(await fresh.claim('evt_old_running', LEASE, B)).toMatchObject({ status: 'processing', digest: A })
    expect(await old.complete('evt_old_running', running.token)).toBe(true)
    expect((await fresh.claim('evt_old_running', LEASE)).status).toBe('done')

    const first = await claimed(old, 'evt_old_o1', A, position('txn_old', T0))
    expect(await old.complete('evt_old_o1', first.token)).toBe(true)
    const late = await claimed(fresh, 'evt_new_o0', A, position('txn_old', T0 - 1000))
    expect(late.newest).toEqual({ at: T0, eventType: 'transaction_settled', eventId: 'evt_old_o1' })
    expect(await fresh.complete('evt_new_o0', late.token)).toBe(true)
    const next = await claimed(fresh, 'evt_new_o2', A, position('txn_old', T0 + 1000))
    expect(next.newest?.eventId).toBe('evt_old_o1')
    expect(next.fencingToken).toBeGreaterThan(first.fencingToken ?? 0)
    expect(await fresh.complete('evt_new_o2', next.token)).toBe(true)
    expect((await claimed(fresh, 'evt_new_o3', A, position('txn_old', T0))).newest?.eventId).toBe('evt_new_o2')

    const holding = await claimed(old, 'evt_old_hold', A, position('txn_held_old', T0))
    expect(await fresh.claim('evt_new_wait', LEASE, A, position('txn_held_old', T0 + 1))).toMatchObject({
      status: 'processing',
    })
    expect(await old.release('evt_old_hold', holding.token)).toBe(true)
    expect((await fresh.claim('evt_new_wait', LEASE, A, position('txn_held_old', T0 + 1))).status).toBe('claimed')
  })

  it('the old release reads what the new one wrote within the rollout window: done markers, claims, holds and marks', async () => {
    const { old, fresh } = await upgradedFleet()

    const handled = await claimed(fresh, 'evt_new_done', A)
    expect(await fresh.complete('evt_new_done', handled.token)).toBe(true)
    expect(await old.claim('evt_new_done', LEASE, B)).toEqual({ status: 'done', digest: A })

    const running = await claimed(fresh, 'evt_new_running', A)
    expect(await old.claim('evt_new_running', LEASE, B)).toMatchObject({ status: 'processing', digest: A })
    expect(await fresh.complete('evt_new_running', running.token)).toBe(true)
    expect((await old.claim('evt_new_running', LEASE)).status).toBe('done')

    const first = await claimed(fresh, 'evt_new_o1', A, position('txn_new', T0))
    expect(await fresh.complete('evt_new_o1', first.token)).toBe(true)
    const late = await claimed(old, 'evt_old_o0', A, position('txn_new', T0 - 1000))
    expect(late.newest).toEqual({ at: T0, eventType: 'transaction_settled', eventId: 'evt_new_o1' })
    expect(late.fencingToken).toBeGreaterThan(first.fencingToken ?? 0)
    await old.release('evt_old_o0', late.token)

    const holding = await claimed(fresh, 'evt_new_hold', A, position('txn_held_new', T0))
    expect(await old.claim('evt_old_wait', LEASE, A, position('txn_held_new', T0 + 1))).toMatchObject({
      status: 'processing',
    })
    expect(await fresh.release('evt_new_hold', holding.token)).toBe(true)
    expect((await old.claim('evt_old_wait', LEASE, A, position('txn_held_new', T0 + 1))).status).toBe('claimed')
  })

  it('a mixed fleet of receivers runs every event once and the events of a key in order, old and new either way', async () => {
    const { old, fresh } = await upgradedFleet()
    const secret = 'whsec_rolling_upgrade'
    const runs = new Map<string, number>()
    /** Per transaction, the settlement times of the events its handlers applied (those not superseded). */
    const applied = new Map<string, number[]>()
    const byTransaction = {
      key: (e: { data: { transaction_id: string } }) => e.data.transaction_id,
      at: (e: { data: { settlement_date: string } }) => e.data.settlement_date,
    }
    const receiver = (store: WebhookStore) =>
      createWebhooks({
        secret,
        store,
        checkAtStart: false,
        ordering: { transaction_settled: byTransaction },
      }).on('transaction_settled', (event, { ordering }) => {
        runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
        if (ordering?.superseded) return
        const { transaction_id, settlement_date } = event.data
        applied.set(transaction_id, [...(applied.get(transaction_id) ?? []), Date.parse(settlement_date)])
      })
    const [oldReceiver, newReceiver] = [receiver(old), receiver(fresh)]
    const send = async (receiving: typeof oldReceiver, delivery: Awaited<ReturnType<typeof signedDelivery>>) =>
      (
        await receiving.receive({
          method: 'POST',
          body: delivery.body,
          getHeader: (name) => delivery.headers[name as never],
        })
      ).status

    // Unordered: both copies of each event at once, to the old and the new instance; a copy answered 409 (the other
    // instance's claim in progress) comes again, as the service's retry would, and is a duplicate.
    const ids = Array.from({ length: 40 }, (_, i) => `evt_fleet_${i}`)
    const unordered = await Promise.all(
      ids.map((id) => signedDelivery(sampleEvent('transaction_settled', { eventId: id }), secret)),
    )
    const answers: number[] = []
    for (const delivery of unordered) {
      const first = await Promise.all([send(oldReceiver, delivery), send(newReceiver, delivery)])
      for (const [i, status] of first.entries()) {
        answers.push(status === 409 ? await send(i === 0 ? oldReceiver : newReceiver, delivery) : status)
      }
    }

    // Ordered: three events of each transaction an hour apart, arriving in every order, each event to both instances
    // one after the other, the old or the new one first by turns: every instance meets marks of the other release.
    const orders = [
      [0, 1, 2],
      [0, 2, 1],
      [1, 0, 2],
      [1, 2, 0],
      [2, 0, 1],
      [2, 1, 0],
    ]
    const transactions = Array.from({ length: 12 }, (_, i) => `txn_fleet_${i}`)
    for (const [i, transaction_id] of transactions.entries()) {
      const order = orders[i % orders.length] as number[]
      for (const [k, n] of order.entries()) {
        const event = sampleEvent('transaction_settled', {
          eventId: `evt_fleet_${transaction_id}_${n}`,
          data: { transaction_id, settlement_date: new Date(T0 + n * HOUR).toISOString() },
        })
        ids.push(event.event_id as string)
        const delivery = await signedDelivery(event, secret)
        const pair =
          (k + Math.floor(i / orders.length)) % 2 === 0 ? [oldReceiver, newReceiver] : [newReceiver, oldReceiver]
        for (const receiving of pair) answers.push(await send(receiving, delivery))
      }
    }

    expect(answers).toEqual(answers.map(() => 200))
    expect(ids.map((id) => `${id}: ${runs.get(id)}`)).toEqual(ids.map((id) => `${id}: 1`))
    for (const transaction_id of transactions) {
      const times = applied.get(transaction_id) ?? []
      // Never out of order: each event applied is newer than the one before, and the newest is applied last.
      expect(times, transaction_id).toEqual([...times].sort((a, b) => a - b))
      expect(new Set(times).size, transaction_id).toBe(times.length)
      expect(times.at(-1), transaction_id).toBe(T0 + 2 * HOUR)
    }
  })

  it('past the window the new release leaves nothing of layout 1, and on a new prefix it opens no window', async () => {
    const keyPrefix = `upgrade:${randomUUID()}:`
    const redis = connect()
    const old = previousStore(redis, { keyPrefix, ...UNHURRIED })
    const warm = await claimed(old, 'evt_warm')
    await old.complete('evt_warm', warm.token)
    const fresh = redisStore(redis, { keyPrefix, rolloutMs: ROLLOUT_MS, ...UNHURRIED })
    const during = await claimed(fresh, 'evt_during', A)
    expect(await fresh.complete('evt_during', during.token)).toBe(true)
    expect(await redis.get(`${keyPrefix}evt_during`)).toBe(`done:${A}`)
    expect(await redis.pttl(`${keyPrefix}evt_during`)).toBeLessThanOrEqual(ROLLOUT_MS)
    // Until the window is over: it runs from the time the fresh store wrote in the layout key (`2:<ms>`).
    const since = Number((await redis.get(`${keyPrefix}layout`))?.slice(2))
    expect(since).toBeGreaterThan(0)
    await new Promise((resolve) => setTimeout(resolve, since + ROLLOUT_MS + 100 - Date.now()))
    const after = await claimed(fresh, 'evt_after', A)
    expect(await fresh.complete('evt_after', after.token)).toBe(true)
    // One key at a time: on a Cluster the two are in different slots.
    expect(await redis.exists(`${keyPrefix}evt_during`)).toBe(0)
    expect(await redis.exists(`${keyPrefix}evt_after`)).toBe(0)
    expect(await fresh.claim('evt_during', LEASE, A)).toEqual({ status: 'done', digest: A })
    // Layout 1's marker stays until its retention.
    expect((await fresh.claim('evt_warm', LEASE)).status).toBe('done')

    const newPrefix = `upgrade:${randomUUID()}:`
    const firstOfAll = redisStore(redis, { keyPrefix: newPrefix, ...UNHURRIED })
    const claim = await claimed(firstOfAll, 'evt_first', A)
    expect(await firstOfAll.complete('evt_first', claim.token)).toBe(true)
    expect(await redis.get(`${newPrefix}layout`)).toBe('2:0')
    expect(await redis.exists(`${newPrefix}evt_first`)).toBe(0)
  })
})
