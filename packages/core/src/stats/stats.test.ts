// webhooks.stats(): this process's deliveries per minute, latency, gauges, conflicts, retried events and secrets,
// in windows read with a fake clock (only Date is faked: promises run as usual).
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import { gate } from '../test-helpers/index.js'
import type { RawDelivery } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const SECRET = 'whsec_stats'
const OLD = 'whsec_stats_old'
const START = Date.parse('2026-11-26T10:00:30Z')
const MINUTE = 60_000
const HOUR = 3_600_000

async function deliver(
  webhooks: { receive(d: RawDelivery): Promise<{ status: number }> },
  id: string,
  { key = SECRET, createdAt }: { key?: string; createdAt?: string } = {},
) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: id, createdAt }), key)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

function receiver(options: Partial<WebhooksOptions<{}, object>> = {}) {
  const webhooks = createWebhooks({ secret: SECRET, checkAtStart: false, ...options })
  webhooks.onError(() => {})
  return webhooks
}

const advance = (ms: number) => vi.setSystemTime(Date.now() + ms)

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(START)
})
afterEach(() => {
  vi.useRealTimers()
})

describe('webhooks.stats()', () => {
  it('counts answers by outcome per minute, over the last 60 minutes only', async () => {
    const webhooks = receiver()
    webhooks.on('transaction_settled', () => {})
    expect((await deliver(webhooks, 'evt_st_1')).status).toBe(200)
    expect((await deliver(webhooks, 'evt_st_1')).status).toBe(200)
    const refused = await webhooks.receive({ method: 'POST', body: '{}', getHeader: () => undefined })
    expect(refused.status).toBe(401)
    advance(MINUTE)
    await deliver(webhooks, 'evt_st_2')
    let stats = webhooks.stats()
    expect(stats.since).toEqual(new Date(START))
    expect(stats.deliveries.perMinute).toHaveLength(60)
    expect(stats.deliveries.perMinute.at(-1)).toEqual({ processed: 1 })
    expect(stats.deliveries.perMinute.at(-2)).toEqual({ processed: 1, duplicate: 1, missing_signature: 1 })
    expect(stats.deliveries.total).toEqual({ processed: 2, duplicate: 1, missing_signature: 1 })
    expect(stats.deliveries.from).toEqual(new Date(Date.parse('2026-11-26T10:01:00Z') - 59 * MINUTE))
    advance(59 * MINUTE)
    stats = webhooks.stats()
    expect(stats.deliveries.total).toEqual({ processed: 1 })
    expect(stats.deliveries.perMinute[0]).toEqual({ processed: 1 })
    advance(MINUTE)
    expect(webhooks.stats().deliveries.total).toEqual({})
    // A delivery after a long quiet spell starts from empty minutes.
    advance(5 * HOUR)
    await deliver(webhooks, 'evt_st_3')
    expect(webhooks.stats().deliveries.total).toEqual({ processed: 1 })
  })

  it('measures latency from the first byte to the answer, p50 and p99 over the hour', async () => {
    const webhooks = receiver()
    const held = new Map<string, ReturnType<typeof gate>>()
    webhooks.on('transaction_settled', (event) => held.get(event.event_id)?.promise)
    expect(webhooks.stats().latency).toEqual({ count: 0, p50Ms: null, p99Ms: null })
    for (let i = 0; i < 98; i++) await deliver(webhooks, `evt_lat_fast_${i}`)
    for (const [id, ms] of [
      ['evt_lat_slow_1', 250],
      ['evt_lat_slow_2', 3000],
    ] as const) {
      const wait = gate()
      held.set(id, wait)
      const answer = deliver(webhooks, id)
      await new Promise((resolve) => setImmediate(resolve))
      advance(ms)
      wait.open()
      expect((await answer).status).toBe(200)
    }
    let { latency } = webhooks.stats()
    expect(latency.count).toBe(100)
    expect(latency.p50Ms).toBe(1) // under 1 ms: the fast ones, answered at once
    expect(latency.p99Ms).toBe(260) // 250 ms falls in the bucket [228, 256): its upper edge, to 2 digits
    await deliver(webhooks, 'evt_lat_fast_last')
    advance(HOUR)
    latency = webhooks.stats().latency
    expect(latency.count).toBe(0)
  })

  it('reads events in flight and waiting for a slot now', async () => {
    const webhooks = receiver({ maxConcurrentEvents: 1 })
    const wait = gate()
    webhooks.on('transaction_settled', () => wait.promise)
    const first = deliver(webhooks, 'evt_fl_1')
    const second = deliver(webhooks, 'evt_fl_2')
    await vi.waitFor(() => expect(webhooks.stats()).toMatchObject({ inFlight: 1, waiting: 1 }))
    wait.open()
    await Promise.all([first, second])
    expect(webhooks.stats()).toMatchObject({ inFlight: 0, waiting: 0 })
  })

  it('counts conflicts (copies with other bytes) over the hour', async () => {
    const webhooks = receiver()
    webhooks.on('transaction_settled', () => {})
    await deliver(webhooks, 'evt_cf_1', { createdAt: '2026-11-26T09:00:00Z' })
    expect((await deliver(webhooks, 'evt_cf_1', { createdAt: '2026-11-26T09:00:01Z' })).status).toBe(200)
    expect(webhooks.stats().conflicts).toBe(1)
    advance(HOUR)
    expect(webhooks.stats().conflicts).toBe(0)
  })

  it('tracks the events answered non-2XX until one is answered 2XX, the oldest created_at first', async () => {
    const webhooks = receiver()
    const failing = new Set(['evt_rt_new', 'evt_rt_old'])
    webhooks.on('transaction_settled', (event) => {
      if (failing.has(event.event_id)) throw new Error('down')
    })
    expect(webhooks.stats().retrying).toEqual({ count: 0, oldest: null })
    await deliver(webhooks, 'evt_rt_new', { createdAt: '2026-11-26T09:00:00Z' })
    advance(MINUTE)
    expect((await deliver(webhooks, 'evt_rt_old', { createdAt: '2026-11-26T08:00:00Z' })).status).toBe(500)
    advance(HOUR)
    await deliver(webhooks, 'evt_rt_old', { createdAt: '2026-11-26T08:00:00Z' })
    expect(webhooks.stats().retrying).toEqual({
      count: 2,
      oldest: {
        eventId: 'evt_rt_old',
        eventType: 'transaction_settled',
        createdAt: '2026-11-26T08:00:00Z',
        firstSeen: new Date(START + MINUTE),
        lastSeen: new Date(START + MINUTE + HOUR),
        attempts: 2,
        lastOutcome: 'handler_failed',
        lastStatus: 500,
      },
    })
    failing.delete('evt_rt_old')
    expect((await deliver(webhooks, 'evt_rt_old', { createdAt: '2026-11-26T08:00:00Z' })).status).toBe(200)
    expect(webhooks.stats().retrying).toMatchObject({ count: 1, oldest: { eventId: 'evt_rt_new', attempts: 1 } })
    // Not seen for longer than the service retries: it gave up.
    advance(73 * HOUR)
    expect(webhooks.stats().retrying).toEqual({ count: 0, oldest: null })
  })

  it('keeps at most 1,000 retried events in detail, forgetting the one first seen longest ago, and counts them all', async () => {
    const webhooks = receiver()
    let down = true
    webhooks.on('transaction_settled', () => {
      if (down) throw new Error('down')
    })
    // The first is the oldest by created_at too: once forgotten, the next oldest shows.
    await deliver(webhooks, 'evt_cap_first', { createdAt: '2026-11-26T07:00:00Z' })
    await deliver(webhooks, 'evt_cap_second', { createdAt: '2026-11-26T07:30:00Z' })
    expect(webhooks.stats().retrying.oldest?.eventId).toBe('evt_cap_first')
    for (let i = 0; i < 1099; i++) await deliver(webhooks, `evt_cap_${i}`)
    // The true count, though only the last 1,000 first seen are kept in detail.
    expect(webhooks.stats().retrying.count).toBe(1101)
    expect(webhooks.stats().retrying.oldest?.eventId).not.toBe('evt_cap_second')
    // One no longer kept in detail, handled at last, leaves the count.
    down = false
    expect((await deliver(webhooks, 'evt_cap_first', { createdAt: '2026-11-26T07:00:00Z' })).status).toBe(200)
    expect(webhooks.stats().retrying.count).toBe(1100)
  })

  it("counts each secret's verifications per hour over 72 hours, with when it was last used", async () => {
    const webhooks = receiver({ secret: [{ secret: SECRET, label: 'sub_new' }, OLD] })
    webhooks.on('transaction_settled', () => {})
    await deliver(webhooks, 'evt_sec_1', { key: OLD })
    await deliver(webhooks, 'evt_sec_2', { key: OLD })
    advance(2 * HOUR)
    await deliver(webhooks, 'evt_sec_3', { key: SECRET })
    await deliver(webhooks, 'evt_sec_4', { key: OLD })
    let { secrets } = webhooks.stats()
    expect(secrets.from).toEqual(new Date(Date.parse('2026-11-26T12:00:00Z') - 71 * HOUR))
    const [fresh, old] = secrets.usage
    expect(fresh).toMatchObject({ index: 0, label: 'sub_new', total: 1, lastUsedAt: new Date(START + 2 * HOUR) })
    expect(old).toMatchObject({ index: 1, total: 3, lastUsedAt: new Date(START + 2 * HOUR) })
    expect(old && 'label' in old).toBe(false)
    expect(old?.perHour).toHaveLength(72)
    expect(old?.perHour.slice(-3)).toEqual([2, 0, 1])
    advance(71 * HOUR)
    secrets = webhooks.stats().secrets
    expect(secrets.usage[1]).toMatchObject({ total: 1, perHour: [1, ...Array(71).fill(0)] })
    advance(HOUR)
    secrets = webhooks.stats().secrets
    expect(secrets.usage[1]).toMatchObject({ total: 0, lastUsedAt: new Date(START + 2 * HOUR) })
  })
})
