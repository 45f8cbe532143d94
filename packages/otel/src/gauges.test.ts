// The observable gauges that read a store at collection time (ordering keys held, dead letters parked): observed
// from the store, absent when it cannot tell, and never holding a collection up past their bound.
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  createWebhooks,
  type DeadLetterStore,
  memoryDeadLetterStore,
  memoryStore,
  type WebhookStore,
  type WebhooksOptions,
} from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { openTelemetry } from './index.js'
import { collectPoints } from './test-helpers.js'

const secret = 'whsec_otel_gauges'
const ordering = {
  transaction_settled: {
    key: (e: { data: { transaction_id: string } }) => e.data.transaction_id,
    at: (e: { data: { settlement_date: string } }) => e.data.settlement_date,
  },
}
/** Waits, 10 s at most, for what a delivery or the receiver's timers (deadlineMs, maxRunMs) bring about. */
const until = { timeout: 10_000, interval: 10 }
const providers: MeterProvider[] = []
afterEach(async () => {
  await Promise.all(providers.splice(0).map((provider) => provider.shutdown()))
})

/** The last receiver's exporter and reader, for a counter's points. */
let last: { exporter: InMemoryMetricExporter; reader: PeriodicExportingMetricReader }

/** A receiver on a meter provider of its own, and a read of one gauge's value (undefined when not observed). */
function receiver(options: Partial<WebhooksOptions> = {}) {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const meterProvider = new MeterProvider({ readers: [reader] })
  providers.push(meterProvider)
  const webhooks = createWebhooks({
    secret,
    logger: { error() {} },
    checkAtStart: false,
    telemetry: openTelemetry({ meterProvider }),
    ...options,
  })
  const gauge = async (name: string): Promise<number | undefined> => {
    const points = await collectPoints(exporter, reader, name)
    return points.length === 0 ? undefined : (points.at(-1)?.value as number)
  }
  last = { exporter, reader }
  return { webhooks, gauge }
}

async function deliverSettled(webhooks: { receive: (d: never) => Promise<unknown> }, transactionId: string) {
  const event = sampleEvent('transaction_settled', { data: { transaction_id: transactionId } })
  const { body, headers } = await signedDelivery(JSON.stringify(event), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  return webhooks.receive({ method: 'POST', body, getHeader } as never)
}

describe('payhooks.ordering.keys_held', () => {
  it('gauges the ordering keys running events hold', async () => {
    const { webhooks, gauge } = receiver({ store: memoryStore(), ordering })
    let finish = () => {}
    webhooks.on(
      'transaction_settled',
      () =>
        new Promise<void>((resolve) => {
          finish = resolve
        }),
    )
    expect(await gauge('payhooks.ordering.keys_held')).toBe(0)
    const answered = deliverSettled(webhooks, 'txn_gauge')
    await vi.waitFor(async () => expect(await webhooks.heldKeys()).toHaveLength(1), until)
    expect(await gauge('payhooks.ordering.keys_held')).toBe(1)
    finish()
    await answered
    expect(await gauge('payhooks.ordering.keys_held')).toBe(0)
  })

  it('is not observed from a store that cannot list held keys, or does not answer: the collection goes on', async () => {
    const { heldKeys: _, ...plain } = memoryStore()
    expect(await receiver({ store: plain as WebhookStore }).gauge('payhooks.ordering.keys_held')).toBeUndefined()
    const hanging: WebhookStore = { ...memoryStore(), heldKeys: () => new Promise(() => {}) }
    const { gauge } = receiver({ store: hanging })
    const started = Date.now()
    expect(await gauge('payhooks.ordering.keys_held')).toBeUndefined()
    expect(await gauge('payhooks.deliveries.in_flight')).toBe(0)
    expect(Date.now() - started).toBeLessThan(5000)
  })
})

describe('payhooks.dead_letters.parked', () => {
  it('gauges the letters parked now, not the replayed ones', async () => {
    const deadLetters = memoryDeadLetterStore()
    const { gauge } = receiver({ deadLetters })
    expect(await gauge('payhooks.dead_letters.parked')).toBe(0)
    const letter = {
      eventType: 'transaction_settled',
      body: new Uint8Array([123, 125]),
      headers: {},
      code: 'schema_mismatch' as const,
      reason: 'does not match its schema',
      createdAt: undefined,
      parkedAt: new Date(),
    }
    deadLetters.park({ ...letter, eventId: 'evt_p1' })
    deadLetters.park({ ...letter, eventId: 'evt_p2' })
    deadLetters.markReplayed('evt_p2', new Date())
    expect(await gauge('payhooks.dead_letters.parked')).toBe(1)
  })

  it('is not observed without a store that counts, or from one that does not answer', async () => {
    expect(await receiver().gauge('payhooks.dead_letters.parked')).toBeUndefined()
    const { count: _, ...plain } = memoryDeadLetterStore()
    expect(
      await receiver({ deadLetters: plain as DeadLetterStore }).gauge('payhooks.dead_letters.parked'),
    ).toBeUndefined()
    const hanging: DeadLetterStore = { ...memoryDeadLetterStore(), count: () => new Promise(() => {}) }
    const started = Date.now()
    expect(await receiver({ deadLetters: hanging }).gauge('payhooks.dead_letters.parked')).toBeUndefined()
    expect(Date.now() - started).toBeLessThan(5000)
  })
})

describe('payhooks.handlers.hung and payhooks.handler.timeouts', () => {
  it('gauges runs hung past maxRunMs and counts their timeouts by event type', async () => {
    const { webhooks, gauge } = receiver({ store: memoryStore(), deadlineMs: 50, maxRunMs: 100 })
    let settle = () => {}
    const stuck = new Promise<void>((resolve) => {
      settle = resolve
    })
    webhooks.on('transaction_settled', () => stuck) // ignores its signal
    expect(await gauge('payhooks.handlers.hung')).toBe(0)
    await deliverSettled(webhooks, 'txn_hung')
    await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(1), until)
    expect(await gauge('payhooks.handlers.hung')).toBe(1)
    expect(await gauge('payhooks.deliveries.in_flight')).toBe(1)
    const timeouts = await counterPoints('payhooks.handler.timeouts')
    expect(timeouts).toEqual([{ attributes: { 'payhooks.event.type': 'transaction_settled' }, value: 1 }])
    settle()
    await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(0), until)
    expect(await gauge('payhooks.handlers.hung')).toBe(0)
    await webhooks.close()

    async function counterPoints(name: string) {
      const { exporter, reader } = last
      return (await collectPoints(exporter, reader, name)).map(({ attributes, value }) => ({ attributes, value }))
    }
  })
})

describe('payhooks.handlers.overrunning and payhooks.event_types.quarantined', () => {
  it('gauge runs past deadlineMs at once, long before maxRunMs, and the type their bulkhead quarantined', async () => {
    const { webhooks, gauge } = receiver({
      store: memoryStore(),
      deadlineMs: 50,
      maxRunMs: 600_000,
      maxConcurrentEvents: 2,
    })
    let settle = () => {}
    const stuck = new Promise<void>((resolve) => {
      settle = resolve
    })
    webhooks.on('transaction_settled', () => stuck) // ignores its signal
    expect(await gauge('payhooks.handlers.overrunning')).toBe(0)
    expect(await gauge('payhooks.event_types.quarantined')).toBe(0)
    await deliverSettled(webhooks, 'txn_overrun') // its type's one slot of two, past the deadline
    await vi.waitFor(() => expect(webhooks.stats().quarantined).toHaveLength(1), until)
    expect(await gauge('payhooks.handlers.overrunning')).toBe(1)
    expect(await gauge('payhooks.event_types.quarantined')).toBe(1)
    expect(await gauge('payhooks.handlers.hung')).toBe(0)
    settle()
    await vi.waitFor(() => expect(webhooks.stats().overrunning.count).toBe(0), until)
    expect(await gauge('payhooks.handlers.overrunning')).toBe(0)
    expect(await gauge('payhooks.event_types.quarantined')).toBe(0)
    await webhooks.close()
  })
})

describe('payhooks.event_types.paused', () => {
  it('observes 1 per paused type, by payhooks.event.type, and 0 once resumed', async () => {
    const { webhooks } = receiver({ store: memoryStore() })
    const points = async () =>
      (await collectPoints(last.exporter, last.reader, 'payhooks.event_types.paused')).map(({ attributes, value }) => ({
        attributes,
        value,
      }))
    expect(await points()).toEqual([])
    await webhooks.pause('transaction_settled', { reason: 'migration' })
    expect(await points()).toEqual([{ attributes: { 'payhooks.event.type': 'transaction_settled' }, value: 1 }])
    await webhooks.resume('transaction_settled')
    expect(await points()).toEqual([{ attributes: { 'payhooks.event.type': 'transaction_settled' }, value: 0 }])
    await webhooks.close()
  })
})

describe('payhooks.health.check', () => {
  it('observes each health() check, 1 passing and 0 failing, with its name and severity: warnings too', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
    const meterProvider = new MeterProvider({ readers: [reader] })
    providers.push(meterProvider)
    const store: WebhookStore = {
      ...memoryStore(),
      health: async () => [
        { name: 'redis', ok: true },
        { name: 'redis_maxmemory_policy', ok: false, severity: 'warning', detail: 'maxmemory-policy is allkeys-lru' },
      ],
    }
    createWebhooks({ secret, store, checkAtStart: false, telemetry: openTelemetry({ meterProvider }) })
    const points = await collectPoints(exporter, reader, 'payhooks.health.check')
    const observed = Object.fromEntries(
      points.map((point) => [
        String(point.attributes['payhooks.health.check']),
        [point.value, point.attributes['payhooks.health.severity']],
      ]),
    )
    expect(observed).toMatchObject({ redis: [1, 'error'], redis_maxmemory_policy: [0, 'warning'] })
  })
})
