// openTelemetry() on the real SDK: spans through InMemorySpanExporter, metrics through InMemoryMetricExporter.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { context, metrics, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api'
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node'
import {
  createWebhooks,
  inProcessQueue,
  memoryDeadLetterStore,
  memoryStore,
  PayloadTooLargeError,
  type RawDelivery,
  type WebhookStore,
  type Webhooks,
  type WebhooksOptions,
} from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION, openTelemetry } from './index.js'
import { collectPoints } from './test-helpers.js'

const secret = 'whsec_otel_test'
const spans = new InMemorySpanExporter()
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
let tracerProvider: NodeTracerProvider
let meterProvider: MeterProvider
let reader: PeriodicExportingMetricReader

// The global SDK, as an application registers it: openTelemetry() without options finds it.
beforeAll(() => {
  tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })
  tracerProvider.register()
  reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })
  meterProvider = new MeterProvider({ readers: [reader] })
  metrics.setGlobalMeterProvider(meterProvider)
})
afterAll(async () => {
  await tracerProvider.shutdown()
  await meterProvider.shutdown()
  trace.disable()
  metrics.disable()
  propagation.disable()
  context.disable()
})
afterEach(() => {
  spans.reset()
})

async function deliver(webhooks: Pick<Webhooks<unknown>, 'receive'>, event: unknown, signWith = secret) {
  const { body, headers } = await signedDelivery(event, signWith)
  const delivery: RawDelivery = { method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] }
  return webhooks.receive(delivery)
}

function receiver(options: Partial<WebhooksOptions> = {}) {
  return createWebhooks({ secret, logger: { error() {} }, telemetry: openTelemetry(), ...options })
}

const named = (name: string) => spans.getFinishedSpans().filter((span) => span.name === name)
const only = (name: string): ReadableSpan => {
  const found = named(name)
  expect(found.map((span) => span.name)).toEqual([name])
  return found[0] as ReadableSpan
}
const childrenOf = (parent: ReadableSpan) =>
  spans.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId)

/** The data points of metric `name`, collected now (cumulative since the provider started). */
function points(name: string): Promise<DataPoint<unknown>[]> {
  return collectPoints(metricExporter, reader, name)
}
/** The value of the counter point whose attributes include `attributes`, summed over the matching points. */
async function count(name: string, attributes: Record<string, unknown>): Promise<number> {
  const matching = (await points(name)).filter((point) =>
    Object.entries(attributes).every(([key, value]) => point.attributes[key] === value),
  )
  return matching.reduce((sum, point) => sum + (point.value as number), 0)
}

describe('openTelemetry(): spans of an inline delivery', () => {
  it('makes one payhooks.receive span with children for store calls and each handler', async () => {
    const webhooks = receiver()
    const tracer = trace.getTracer('app')
    webhooks.on('transaction_settled', async function credit() {
      // A span the handler makes nests under the handler's span (its context is active).
      await tracer.startActiveSpan('ledger.credit', async (span) => span.end())
    })
    webhooks.onAny(() => {})
    const result = await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_otel_1' }))
    expect(result.status).toBe(200)

    const receive = only('payhooks.receive')
    expect(receive.instrumentationScope).toMatchObject({ name: INSTRUMENTATION_NAME, version: INSTRUMENTATION_VERSION })
    expect(receive.attributes).toMatchObject({
      'payhooks.event.id': 'evt_otel_1',
      'payhooks.event.type': 'transaction_settled',
      'payhooks.outcome': 'processed',
      'http.response.status_code': 200,
      'payhooks.duplicate': false,
    })
    expect(receive.attributes['payhooks.store.claim.duration_ms']).toBeTypeOf('number')
    expect(receive.attributes['payhooks.store.complete.duration_ms']).toBeTypeOf('number')
    expect(receive.status.code).toBe(SpanStatusCode.UNSET)
    expect(childrenOf(receive).map((span) => span.name)).toEqual(
      expect.arrayContaining([
        'payhooks.store.claim',
        'payhooks.handler',
        'payhooks.handler',
        'payhooks.store.complete',
      ]),
    )
    expect(childrenOf(receive)).toHaveLength(4)
    const claim = only('payhooks.store.claim')
    expect(claim.attributes).toMatchObject({ 'payhooks.store.operation': 'claim', 'payhooks.event.id': 'evt_otel_1' })
    const handlers = named('payhooks.handler')
    const credit = handlers.find((span) => span.attributes['code.function.name'] === 'credit') as ReadableSpan
    expect(credit.attributes).toMatchObject({
      'payhooks.handler.kind': 'on',
      'payhooks.handler.index': 0,
      'payhooks.event.type': 'transaction_settled',
    })
    expect(handlers.find((span) => span !== credit)?.attributes['payhooks.handler.kind']).toBe('any')
    expect(only('ledger.credit').parentSpanContext?.spanId).toBe(credit.spanContext().spanId)
    expect(credit.spanContext().traceId).toBe(receive.spanContext().traceId)
  })

  it('nests payhooks.receive under the span active when receive() is called (the HTTP server span)', async () => {
    const webhooks = receiver()
    const tracer = trace.getTracer('http')
    await tracer.startActiveSpan('POST /webhooks', async (server) => {
      await deliver(webhooks, sampleEvent('transaction_settled'))
      server.end()
    })
    expect(only('payhooks.receive').parentSpanContext?.spanId).toBe(only('POST /webhooks').spanContext().spanId)
  })

  it('marks a duplicate, and counts it as a dedupe hit', async () => {
    const webhooks = receiver()
    const hitsBefore = await count('payhooks.dedupe.hits', { 'payhooks.event.type': 'transaction_settled' })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_otel_dup' })
    await deliver(webhooks, event)
    spans.reset()
    await deliver(webhooks, event)
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({ 'payhooks.outcome': 'duplicate', 'payhooks.duplicate': true })
    expect(childrenOf(receive).map((span) => span.name)).toEqual(['payhooks.store.claim'])
    expect(await count('payhooks.dedupe.hits', { 'payhooks.event.type': 'transaction_settled' })).toBe(hitsBefore + 1)
  })

  it('marks a copy with other bytes as a conflict: an event with both digests on the span, and counts it', async () => {
    const webhooks = receiver()
    const attributes = { 'payhooks.event.type': 'transaction_settled', 'payhooks.event.in_progress': false }
    const before = await count('payhooks.event.conflicts', attributes)
    const event = sampleEvent('transaction_settled', { eventId: 'evt_otel_conflict' })
    await deliver(webhooks, event)
    spans.reset()
    await deliver(webhooks, { ...event, merchant_id: 1 })
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({ 'payhooks.outcome': 'duplicate', 'payhooks.event.conflict': true })
    expect(receive.events.map((spanEvent) => spanEvent.name)).toEqual(['payhooks.event_conflict'])
    const digests = receive.events[0]?.attributes ?? {}
    expect(digests['payhooks.body_digest.received']).toMatch(/^[0-9a-f]{32}$/)
    expect(digests['payhooks.body_digest.handled']).toMatch(/^[0-9a-f]{32}$/)
    expect(digests['payhooks.body_digest.received']).not.toBe(digests['payhooks.body_digest.handled'])
    expect(await count('payhooks.event.conflicts', attributes)).toBe(before + 1)
  })

  it('records a failing handler on its span and the delivery as a 500 error', async () => {
    const webhooks = receiver()
    webhooks.on('transaction_returned', () => {
      throw new TypeError('ledger refused')
    })
    expect((await deliver(webhooks, sampleEvent('transaction_returned'))).status).toBe(500)
    const handler = only('payhooks.handler')
    expect(handler.status).toMatchObject({ code: SpanStatusCode.ERROR, message: 'ledger refused' })
    expect(handler.attributes['error.type']).toBe('TypeError')
    expect(handler.events.map((event) => event.name)).toContain('exception')
    const receive = only('payhooks.receive')
    expect(receive.status.code).toBe(SpanStatusCode.ERROR)
    expect(receive.attributes).toMatchObject({
      'payhooks.outcome': 'handler_failed',
      'http.response.status_code': 500,
      'error.type': 'handler_failed',
    })
    expect(childrenOf(receive).map((span) => span.name)).toEqual(
      expect.arrayContaining(['payhooks.store.claim', 'payhooks.handler', 'payhooks.store.release']),
    )
  })

  it('records a refused delivery with its status and no event', async () => {
    const webhooks = receiver()
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_other')).status).toBe(401)
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({
      'payhooks.outcome': 'invalid_signature',
      'http.response.status_code': 401,
    })
    expect(receive.attributes['payhooks.event.id']).toBeUndefined()
    expect(receive.status.code).toBe(SpanStatusCode.UNSET) // the sender's mistake, as 4XX are for HTTP servers
    expect(childrenOf(receive)).toEqual([])
  })

  it("puts the signature doctor's hint on a refused delivery's span", async () => {
    const webhooks = receiver()
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
    const sent = `${body}\n` // a trailing newline added on the way
    await webhooks.receive({ method: 'POST', body: sent, getHeader: (name) => headers[name as keyof typeof headers] })
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'invalid_signature',
      'payhooks.signature.hint': 'trailing_newline',
    })
  })

  it('says which secret verified a delivery: span attributes and the payhooks.secret.verified counter', async () => {
    const webhooks = receiver({ secret: [secret, { secret: 'whsec_otel_old', label: 'sub_old' }] })
    const old = { 'payhooks.secret.index': 1, 'payhooks.secret.label': 'sub_old' }
    const before = await count('payhooks.secret.verified', old)
    const firstBefore = await count('payhooks.secret.verified', { 'payhooks.secret.index': 0 })
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_otel_old')).status).toBe(200)
    expect(only('payhooks.receive').attributes).toMatchObject(old)
    spans.reset()
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    const first = only('payhooks.receive').attributes
    expect(first['payhooks.secret.index']).toBe(0)
    expect(first['payhooks.secret.label']).toBeUndefined()
    expect(await count('payhooks.secret.verified', old)).toBe(before + 1)
    expect(await count('payhooks.secret.verified', { 'payhooks.secret.index': 0 })).toBe(firstBefore + 1)
  })

  it("records an adapter's rejection (webhooks.reject) as a delivery", async () => {
    const webhooks = receiver()
    const before = await count('payhooks.deliveries', { 'payhooks.outcome': 'payload_too_large' })
    expect(webhooks.reject(new PayloadTooLargeError(10)).status).toBe(413)
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'payload_too_large',
      'http.response.status_code': 413,
    })
    expect(await count('payhooks.deliveries', { 'payhooks.outcome': 'payload_too_large' })).toBe(before + 1)
  })

  it('ends the span with the deadline answer, while the handler span goes on until the handler ends', async () => {
    const webhooks = receiver({ deadlineMs: 50 })
    let release!: () => void
    const slow = new Promise<void>((resolve) => {
      release = resolve
    })
    webhooks.on('transaction_settled', () => slow)
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({
      'payhooks.outcome': 'deadline_exceeded',
      'http.response.status_code': 503,
      'error.type': 'deadline_exceeded',
    })
    expect(receive.status.code).toBe(SpanStatusCode.ERROR)
    expect(named('payhooks.handler')).toEqual([])
    release()
    await webhooks.close()
    expect(only('payhooks.handler').parentSpanContext?.spanId).toBe(receive.spanContext().spanId)
    expect(only('payhooks.store.complete').parentSpanContext?.spanId).toBe(receive.spanContext().spanId)
    expect(named('payhooks.receive')).toHaveLength(1)
  })

  it('records a failing store call, and counts it as a store error by operation', async () => {
    const store: WebhookStore = {
      claim: () => Promise.reject(Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' })),
      extend: () => true,
      complete: () => true,
      release: () => true,
    }
    const webhooks = receiver({ store })
    const before = await count('payhooks.store.errors', { 'payhooks.store.operation': 'claim' })
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    const claim = only('payhooks.store.claim')
    expect(claim.status.code).toBe(SpanStatusCode.ERROR)
    expect(claim.attributes['error.type']).toBe('ECONNREFUSED')
    expect(only('payhooks.receive').attributes).toMatchObject({
      'payhooks.outcome': 'store_unavailable',
      'http.response.status_code': 503,
    })
    expect(await count('payhooks.store.errors', { 'payhooks.store.operation': 'claim' })).toBe(before + 1)
    const failed = (await points('payhooks.store.duration')).filter(
      (point) => point.attributes['payhooks.store.operation'] === 'claim' && point.attributes['error.type'],
    )
    expect(failed.map((point) => point.attributes['error.type'])).toEqual(['ECONNREFUSED'])
  })
})

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

describe('openTelemetry(): queue mode and replays', () => {
  it("links the dispatch span to the delivery's receive span through the queue", async () => {
    const queue = inProcessQueue({ retries: 0 })
    const webhooks = receiver({ queue })
    const handled = new Promise<void>((resolve) => {
      webhooks.on('transaction_settled', () => resolve())
    })
    const result = await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_otel_queue' }))
    expect(result.status).toBe(200)
    await handled
    await queue.drain()
    const receive = only('payhooks.receive')
    expect(receive.attributes).toMatchObject({ 'payhooks.outcome': 'queued', 'http.response.status_code': 200 })
    const enqueue = only('payhooks.queue.enqueue')
    expect(enqueue.kind).toBe(SpanKind.PRODUCER)
    expect(enqueue.parentSpanContext?.spanId).toBe(receive.spanContext().spanId)
    const dispatch = only('payhooks.dispatch')
    expect(dispatch.kind).toBe(SpanKind.CONSUMER)
    expect(dispatch.links.map((link) => link.context.spanId)).toEqual([receive.spanContext().spanId])
    expect(dispatch.links[0]?.context.traceId).toBe(receive.spanContext().traceId)
    expect(dispatch.attributes).toMatchObject({
      'payhooks.event.id': 'evt_otel_queue',
      'payhooks.dispatch.source': 'queue',
      'payhooks.outcome': 'processed',
    })
    expect(only('payhooks.handler').parentSpanContext?.spanId).toBe(dispatch.spanContext().spanId)
  })

  it('makes a payhooks.replay span for a dead letter replayed', async () => {
    const deadLetters = memoryDeadLetterStore()
    const webhooks = receiver({ deadLetters })
    const broken = { ...sampleEvent('transaction_settled', { eventId: 'evt_otel_replay' }), data: {} }
    await deliver(webhooks, broken)
    const fixed = createWebhooks({
      secret,
      deadLetters,
      telemetry: openTelemetry(),
      schemas: { transaction_settled: (await import('@payhooks/core')).baseEnvelopeSchema },
    })
    fixed.on('transaction_settled', () => {})
    spans.reset()
    expect((await fixed.replay('evt_otel_replay')).status).toBe('processed')
    const replay = only('payhooks.replay')
    expect(replay.attributes).toMatchObject({
      'payhooks.event.id': 'evt_otel_replay',
      'payhooks.dispatch.source': 'replay',
      'payhooks.outcome': 'processed',
    })
    expect(childrenOf(replay).map((span) => span.name)).toEqual(
      expect.arrayContaining(['payhooks.store.claim', 'payhooks.handler', 'payhooks.store.complete']),
    )
  })
})

describe('openTelemetry(): providers', () => {
  it('uses the providers it is given, and links queue runs without a registered propagator', async () => {
    const exporter = new InMemorySpanExporter()
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
    const own = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const ownReader = new PeriodicExportingMetricReader({ exporter: own, exportIntervalMillis: 3_600_000 })
    const meters = new MeterProvider({ readers: [ownReader] })
    // No propagator in this context: the carrier falls back to a W3C traceparent of its own.
    propagation.disable()
    try {
      const queue = inProcessQueue({ retries: 0 })
      const webhooks = createWebhooks({
        secret,
        store: memoryStore(),
        queue,
        telemetry: openTelemetry({ tracerProvider: provider, meterProvider: meters }),
      })
      webhooks.on('transaction_settled', () => {})
      await deliver(webhooks, sampleEvent('transaction_settled'))
      await queue.drain()
      const finished = exporter.getFinishedSpans()
      const receive = finished.find((span) => span.name === 'payhooks.receive') as ReadableSpan
      const dispatch = finished.find((span) => span.name === 'payhooks.dispatch') as ReadableSpan
      expect(dispatch.links.map((link) => link.context.spanId)).toEqual([receive.spanContext().spanId])
      expect(named('payhooks.receive')).toEqual([]) // nothing went to the global provider
      await ownReader.forceFlush()
      const names = own
        .getMetrics()
        .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics))
        .map((metric) => metric.descriptor.name)
      expect(names).toEqual(expect.arrayContaining(['payhooks.deliveries', 'payhooks.dispatches']))
    } finally {
      tracerProvider.register()
      await provider.shutdown()
      await meters.shutdown()
    }
  })

  it('records nothing without an SDK, and picks up one registered later', async () => {
    trace.disable()
    metrics.disable()
    try {
      const telemetry = openTelemetry()
      expect(telemetry.receive()).toBeUndefined()
      const webhooks = createWebhooks({ secret, telemetry })
      webhooks.on('transaction_settled', () => {})
      expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
      expect(spans.getFinishedSpans()).toEqual([])
      tracerProvider.register()
      metrics.setGlobalMeterProvider(meterProvider)
      await deliver(webhooks, sampleEvent('transaction_settled'))
      expect(only('payhooks.receive').attributes['payhooks.outcome']).toBe('processed')
    } finally {
      trace.disable()
      metrics.disable()
      tracerProvider.register()
      metrics.setGlobalMeterProvider(meterProvider)
    }
  })

  it('names its instrumentation scope after this package and its version', () => {
    const manifest = JSON.parse(readFileSync(resolve(import.meta.dirname, '../package.json'), 'utf8'))
    expect([INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION]).toEqual([manifest.name, manifest.version])
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
    const ages = (await points('payhooks.event.age')).filter(
      (point) => point.attributes['payhooks.outcome'] === 'processed',
    )
    const age = ages[0]?.value as { max: number } | undefined
    expect(age?.max).toBeGreaterThanOrEqual(7200)
    expect(age?.max).toBeLessThan(7300)
  })

  it('gauges deliveries in flight and waiting for an event slot', async () => {
    const webhooks = receiver({ maxConcurrentEvents: 1, deadlineMs: 2000 })
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
    const base = memoryStore()
    let calls = 0
    let secondRenewal = () => {}
    const renewedTwice = new Promise<void>((resolve) => {
      secondRenewal = resolve
    })
    const store: WebhookStore = {
      ...base,
      extend: (id, token, ms) => {
        if (++calls !== 2) return base.extend(id, token, ms)
        secondRenewal()
        return false
      },
    }
    const webhooks = receiver({ store, deadlineMs: 100, leaseMs: 150 })
    // The handler runs until the second renewal was answered lost, however late a loaded machine's timers fire.
    webhooks.on('transaction_settled', () => renewedTwice.then(() => new Promise((resolve) => setTimeout(resolve, 20))))
    const renewed = await count('payhooks.lease.renewals', { 'payhooks.lease.lost': false })
    const lost = await count('payhooks.lease.renewals', { 'payhooks.lease.lost': true })
    await deliver(webhooks, sampleEvent('transaction_settled'))
    await renewedTwice
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(await count('payhooks.lease.renewals', { 'payhooks.lease.lost': false })).toBeGreaterThan(renewed)
    expect(await count('payhooks.lease.renewals', { 'payhooks.lease.lost': true })).toBe(lost + 1)
  })
})
