// openTelemetry()'s metrics on the real SDK, through InMemoryMetricExporter.
import { memoryDeadLetterStore, memoryStore, type WebhookStore } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { deliver, globalSdk, receiver, secret } from './test-helpers.js'

const { spans, only, points, count } = globalSdk()

describe('openTelemetry(): metrics', () => {
  it('counts deliveries by outcome and status, and measures handlers and store calls', async () => {
    const webhooks = receiver()
    webhooks.on('sale_created_from_batch', () => {})
    const before = await count('payhooks.deliveries', {
      'payhooks.outcome': 'processed',
      'http.response.status_code': 200,
      'payhooks.event.type': 'sale_created_from_batch',
    })
    await deliver(webhooks, sampleEvent('sale_created_from_batch'))
    await deliver(webhooks, sampleEvent('sale_created_from_batch'))
    expect(
      await count('payhooks.deliveries', {
        'payhooks.outcome': 'processed',
        'http.response.status_code': 200,
        'payhooks.event.type': 'sale_created_from_batch',
      }),
    ).toBe(before + 2)
    const handler = (await points('payhooks.handler.duration')).find(
      (point) => point.attributes['payhooks.event.type'] === 'sale_created_from_batch',
    )
    expect(handler?.value).toMatchObject({ count: 2 })
    const claims = (await points('payhooks.store.duration')).filter(
      (point) => point.attributes['payhooks.store.operation'] === 'claim' && !point.attributes['error.type'],
    )
    expect(claims.reduce((sum, point) => sum + (point.value as { count: number }).count, 0)).toBeGreaterThanOrEqual(2)
  })

  it('counts a parked event as a dead letter, with a span for the park', async () => {
    const webhooks = receiver({ deadLetters: memoryDeadLetterStore() })
    const labels = {
      'payhooks.event.type': 'transaction_settled',
      'payhooks.dead_letter.code': 'schema_mismatch',
      'payhooks.dead_letter.durable': false,
    }
    const before = await count('payhooks.dead_letters', labels)
    const broken = { ...sampleEvent('transaction_settled'), data: { settlement_amount: 'twelve' } }
    expect((await deliver(webhooks, broken)).status).toBe(422)
    expect(await count('payhooks.dead_letters', labels)).toBe(before + 1)
    expect(only('payhooks.dead_letters.park').parentSpanContext?.spanId).toBe(
      only('payhooks.receive').spanContext().spanId,
    )
  })
})

describe('openTelemetry(): what an operator alerts on', () => {
  it('puts the event id, type and secret index on the span of a schema_mismatch and of a future_event', async () => {
    const webhooks = receiver({ secret: [secret, 'whsec_otel_second'] })
    const broken = {
      ...sampleEvent('transaction_settled', { eventId: 'evt_broken' }),
      data: { settlement_amount: 'x' },
    }
    expect((await deliver(webhooks, broken, 'whsec_otel_second')).status).toBe(422)
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'schema_mismatch',
      'payhooks.event.id': 'evt_broken',
      'payhooks.event.type': 'transaction_settled',
      'payhooks.secret.index': 1,
    })
    spans.reset()
    const ahead = new Date(Date.now() + 3_600_000).toISOString()
    const future = sampleEvent('transaction_settled', { eventId: 'evt_future', createdAt: ahead })
    expect((await deliver(webhooks, future)).status).toBe(503)
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'future_event',
      'payhooks.event.id': 'evt_future',
      'payhooks.event.type': 'transaction_settled',
      'payhooks.secret.index': 0,
    })
  })

  it('measures the answer from the first byte, and the age of each event handled', async () => {
    const webhooks = receiver()
    webhooks.on('transaction_settled', () => new Promise((resolve) => setTimeout(resolve, 30)))
    const createdAt = new Date(Date.now() - 2 * 3_600_000).toISOString()
    expect((await deliver(webhooks, sampleEvent('transaction_settled', { createdAt }))).status).toBe(200)
    const answered = (await points('payhooks.answer.duration')).find(
      (point) => point.attributes['payhooks.outcome'] === 'processed',
    )
    const answer = answered?.value as { min: number; count: number } | undefined
    expect(answer?.count).toBeGreaterThanOrEqual(1)
    // This file's other events are handled too (a point per type): the settled one is this test's.
    const ages = (await points('payhooks.event.age')).filter(
      (point) =>
        point.attributes['payhooks.outcome'] === 'processed' &&
        point.attributes['payhooks.event.type'] === 'transaction_settled',
    )
    const age = ages[0]?.value as { max: number } | undefined
    expect(age?.max).toBeGreaterThanOrEqual(7200)
    expect(age?.max).toBeLessThan(7300)
  })

  it('gauges deliveries in flight and waiting for an event slot', async () => {
    // The waiter leaves at its deadline: far past the gauges' reads, which a loaded machine may stretch towards 2 s.
    const webhooks = receiver({ maxConcurrentEvents: 1, deadlineMs: 9000 })
    let open!: () => void
    const held = new Promise<void>((resolve) => {
      open = resolve
    })
    webhooks.on('transaction_settled', () => held)
    const first = deliver(webhooks, sampleEvent('transaction_settled'))
    const second = deliver(webhooks, sampleEvent('transaction_settled'))
    await new Promise((resolve) => setTimeout(resolve, 50))
    const gauge = async (name: string) => Math.max(...(await points(name)).map((point) => point.value as number))
    expect(await gauge('payhooks.deliveries.in_flight')).toBeGreaterThanOrEqual(1)
    expect(await gauge('payhooks.deliveries.waiting')).toBe(1)
    open()
    await Promise.all([first, second])
  })

  it('counts lease renewals, and the ones that found the claim lost', async () => {
    const renewed = await count('payhooks.lease.renewals', { 'payhooks.lease.lost': false })
    const lost = await count('payhooks.lease.renewals', { 'payhooks.lease.lost': true })
    // On a clock the test drives: the renewal at 50 ms finds the 150 ms lease still running, the one at 100 ms
    // finds it lost; however late a loaded machine's timers fire, the handler outlives both.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] })
    try {
      const base = memoryStore()
      let calls = 0
      const store: WebhookStore = {
        ...base,
        extend: (id, token, ms) => (++calls === 2 ? false : base.extend(id, token, ms)),
      }
      const webhooks = receiver({ store, deadlineMs: 100, leaseMs: 150 })
      webhooks.on('transaction_settled', () => new Promise((resolve) => setTimeout(resolve, 120)))
      const delivered = deliver(webhooks, sampleEvent('transaction_settled'))
      await vi.advanceTimersByTimeAsync(120)
      expect((await delivered).status).toBe(503)
      expect(calls).toBe(2)
    } finally {
      vi.useRealTimers()
    }
    expect(await count('payhooks.lease.renewals', { 'payhooks.lease.lost': false })).toBe(renewed + 1)
    expect(await count('payhooks.lease.renewals', { 'payhooks.lease.lost': true })).toBe(lost + 1)
  })
})

describe('openTelemetry(): alerts', () => {
  it('counts each alert raised and resolved, and gauges those firing', async () => {
    const webhooks = receiver({
      store: memoryStore(),
      checkAtStart: false,
      alerts: { signatureFailures: { after: 2 }, checkEveryMs: 20 },
    })
    webhooks.on('transaction_settled', () => {})
    const labels = { 'payhooks.alert.name': 'signature_failures', 'payhooks.alert.severity': 'critical' }
    const raised = await count('payhooks.alerts', { ...labels, 'payhooks.alert.firing': true })
    const resolved = await count('payhooks.alerts', { ...labels, 'payhooks.alert.firing': false })
    const firing = async () =>
      (await points('payhooks.alerts.firing')).find(
        (point) => point.attributes['payhooks.alert.name'] === 'signature_failures',
      )?.value
    expect(await firing()).toBeUndefined()
    for (let i = 0; i < 2; i++) {
      expect((await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_otel_wrong')).status).toBe(401)
    }
    // Raised and resolved by the alerts' timer (every 20 ms), each check a metrics collection: 10 s, not 1 s, for both.
    const until = { timeout: 10_000, interval: 20 }
    await vi.waitFor(
      async () => expect(await count('payhooks.alerts', { ...labels, 'payhooks.alert.firing': true })).toBe(raised + 1),
      until,
    )
    expect(await firing()).toBe(1)
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    await vi.waitFor(
      async () =>
        expect(await count('payhooks.alerts', { ...labels, 'payhooks.alert.firing': false })).toBe(resolved + 1),
      until,
    )
    expect(await count('payhooks.alerts', { ...labels, 'payhooks.alert.firing': true })).toBe(raised + 1)
    await webhooks.close()
  })
})
