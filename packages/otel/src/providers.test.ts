// openTelemetry() on the real SDK: a queued event's dispatch linked to its delivery, replays, and the providers used.
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { metrics, propagation, SpanKind, trace } from '@opentelemetry/api'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node'
import { createWebhooks, inProcessQueue, memoryDeadLetterStore, memoryStore } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION, openTelemetry } from './index.js'
import { deliver, globalSdk, receiver, secret } from './test-helpers.js'

const { spans, tracerProvider, meterProvider, named, only, childrenOf } = globalSdk()

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
