// A rolling upgrade of a Redis fleet (issue 49): instances of the previous release (layout 1, one key per handled
// event; vendored from commit ad6f70a in test/fixtures/redis-store-ad6f70a) and of this one (layout 2, shared hashes)
// on one Redis and prefix. Both ways: what the old release wrote, the new one reads (a copy handled under layout 1 is a
// duplicate, an old claim in progress is respected, an old mark still orders), and what the new one writes during the
// rollout window, the old one reads; through receivers, a mixed fleet runs every event once.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type OrderingPosition, type WebhookStore } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { redisStore as previousStore } from '../fixtures/redis-store-ad6f70a/store.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')

const A = '0123456789abcdef0123456789abcdef'
const B = 'fedcba9876543210fedcba9876543210'
const LEASE = 60_000
const T0 = 1_764_230_400_000
const clients: Redis[] = []
const connect = () => {
  const client = new Redis(REDIS_URL)
  clients.push(client)
  return client
}
afterAll(() => {
  for (const client of clients) client.disconnect()
})

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

/** A prefix where the previous release ran first (so the new release finds layout 1 and opens its window). */
async function upgradedFleet() {
  const keyPrefix = `upgrade:${randomUUID()}:`
  const old = previousStore(connect(), { keyPrefix })
  const warm = await claimed(old, 'evt_warm')
  await old.complete('evt_warm', warm.token)
  const fresh = redisStore(connect(), { keyPrefix })
  await fresh.init?.()
  return { keyPrefix, old, fresh }
}

describe('a rolling upgrade from the previous release (layout 1) on one Redis', () => {
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

  it('a mixed fleet of receivers runs every event once, in either order of old and new instances', async () => {
    const { old, fresh } = await upgradedFleet()
    const secret = 'whsec_rolling_upgrade'
    const runs = new Map<string, number>()
    const receiver = (store: WebhookStore) =>
      createWebhooks({ secret, store, checkAtStart: false }).on('transaction_settled', (event) => {
        runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
      })
    const fleet = [receiver(old), receiver(fresh)]
    const ids = Array.from({ length: 40 }, (_, i) => `evt_fleet_${i}`)
    const answers: number[] = []
    for (const [i, id] of ids.entries()) {
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: id }), secret)
      // Every event to both instances: first to the old one for even events, to the new one for odd ones.
      for (const webhooks of i % 2 === 0 ? fleet : [...fleet].reverse()) {
        const answer = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })
        answers.push(answer.status)
      }
    }
    expect(answers.every((status) => status === 200)).toBe(true)
    expect(ids.map((id) => runs.get(id))).toEqual(ids.map(() => 1))
  })

  it('past the window the new release leaves nothing of layout 1, and on a new prefix it opens no window', async () => {
    const keyPrefix = `upgrade:${randomUUID()}:`
    const redis = connect()
    const old = previousStore(redis, { keyPrefix })
    const warm = await claimed(old, 'evt_warm')
    await old.complete('evt_warm', warm.token)
    const fresh = redisStore(redis, { keyPrefix, rolloutMs: 500 })
    const during = await claimed(fresh, 'evt_during', A)
    expect(await fresh.complete('evt_during', during.token)).toBe(true)
    expect(await redis.get(`${keyPrefix}evt_during`)).toBe(`done:${A}`)
    expect(await redis.pttl(`${keyPrefix}evt_during`)).toBeLessThanOrEqual(500)
    await new Promise((resolve) => setTimeout(resolve, 600))
    const after = await claimed(fresh, 'evt_after', A)
    expect(await fresh.complete('evt_after', after.token)).toBe(true)
    expect(await redis.exists(`${keyPrefix}evt_during`, `${keyPrefix}evt_after`)).toBe(0)
    expect(await fresh.claim('evt_during', LEASE, A)).toEqual({ status: 'done', digest: A })
    // Layout 1's marker stays until its retention.
    expect((await fresh.claim('evt_warm', LEASE)).status).toBe('done')

    const newPrefix = `upgrade:${randomUUID()}:`
    const firstOfAll = redisStore(redis, { keyPrefix: newPrefix })
    const claim = await claimed(firstOfAll, 'evt_first', A)
    expect(await firstOfAll.complete('evt_first', claim.token)).toBe(true)
    expect(await redis.get(`${newPrefix}layout`)).toBe('2:0')
    expect(await redis.exists(`${newPrefix}evt_first`)).toBe(0)
  })
})
