// Queue mode on a real Redis with the OpenTelemetry SDK registered: the worker's payhooks.dispatch span links to
// the payhooks.receive span of the delivery, through the trace context carried in the BullMQ job's data.
import { randomUUID } from 'node:crypto'
import { context, metrics, propagation, SpanKind, trace } from '@opentelemetry/api'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node'
import { bullmqQueue, jobIdFor, startWorker } from '@payhooks/bullmq'
import { createWebhooks, type VerifiedEvent, type WebhookError, type Webhooks } from '@payhooks/core'
import { openTelemetry } from '@payhooks/otel'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error('REDIS_URL is not set: run these tests with `node scripts/test.mjs otel`, which starts redis-server')
}
const SECRET = 'whsec_otel_queue'

const spans = new InMemorySpanExporter()
const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })
const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })
const meterProvider = new MeterProvider({ readers: [reader] })

beforeAll(() => {
  tracerProvider.register() // W3C trace context propagator and AsyncLocalStorage context, as the Node SDK sets up
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

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
  spans.reset()
})

async function until<T>(probe: () => T | Promise<T>, what: string, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = await probe()
    if (value) return value as NonNullable<T>
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}

async function deliver(webhooks: Pick<Webhooks<unknown>, 'receive'>, eventId: string) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId }), SECRET)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

/** A receiver in queue mode, optionally with telemetry, and a worker with its own receiver, on a fresh queue. */
function setup({ receiverTelemetry = true, workerTelemetry = true, attempts = 8 } = {}) {
  const id = randomUUID()
  const names = { name: `otel-${id}`, prefix: `payhooks-otel-bull-${id}` }
  const redis = new Redis(REDIS_URL as string, { maxRetriesPerRequest: null })
  redis.on('error', () => {})
  const store = redisStore(redis, { keyPrefix: `payhooks-otel-store:${id}:`, ...UNHURRIED })
  const queue = bullmqQueue({ connection: REDIS_URL as string, ...names, attempts, backoffMs: 10 })
  const errors: WebhookError[] = []
  const receiver = createWebhooks({
    secret: SECRET,
    store,
    queue,
    leaseMs: 30_000,
    ...(receiverTelemetry ? { telemetry: openTelemetry() } : {}),
  })
  // Workers usually run in processes of their own, with a receiver of their own.
  const workerReceiver = createWebhooks({
    secret: SECRET,
    store,
    leaseMs: 30_000,
    ...(workerTelemetry ? { telemetry: openTelemetry() } : {}),
  })
  workerReceiver.onError((error) => errors.push(error))
  const worker = startWorker(workerReceiver as Webhooks<unknown>, { connection: redis, ...names })
  const inspect = new Queue(names.name, { connection: redis, prefix: names.prefix })
  cleanups.push(
    async () => redis.disconnect(),
    () => worker.close(true),
    () => queue.close(),
    async () => {
      await inspect.obliterate({ force: true })
      await inspect.close()
      const keys = await redis.keys(`payhooks-otel-store:${id}:*`)
      if (keys.length > 0) await redis.del(...keys)
    },
  )
  return { receiver, workerReceiver, queue, worker, inspect, errors }
}

const finished = (name: string) => spans.getFinishedSpans().filter((span) => span.name === name)

describe('queue mode with OpenTelemetry', () => {
  it("links the worker's dispatch span to the receive span through the job's data", async () => {
    const { receiver, workerReceiver, inspect, errors } = setup()
    const seen: VerifiedEvent[] = []
    workerReceiver.on('transaction_settled', async (event) => {
      seen.push(event as VerifiedEvent)
      await trace.getTracer('app').startActiveSpan('ledger.credit', async (span) => span.end())
    })
    expect((await deliver(receiver, 'evt_otel_bullmq')).status).toBe(200)

    const dispatch = await until(() => finished('payhooks.dispatch')[0], 'the dispatch span')
    const receive = finished('payhooks.receive')[0] as ReadableSpan
    expect(receive.attributes).toMatchObject({
      'payhooks.event.id': 'evt_otel_bullmq',
      'payhooks.outcome': 'queued',
      'http.response.status_code': 200,
    })
    expect(finished('payhooks.queue.enqueue')[0]?.parentSpanContext?.spanId).toBe(receive.spanContext().spanId)
    expect(dispatch.kind).toBe(SpanKind.CONSUMER)
    expect(dispatch.links.map((link) => [link.context.traceId, link.context.spanId])).toEqual([
      [receive.spanContext().traceId, receive.spanContext().spanId],
    ])
    expect(dispatch.attributes).toMatchObject({
      'payhooks.event.id': 'evt_otel_bullmq',
      'payhooks.event.type': 'transaction_settled',
      'payhooks.dispatch.source': 'queue',
      'payhooks.outcome': 'processed',
    })
    const handler = finished('payhooks.handler')[0] as ReadableSpan
    expect(handler.parentSpanContext?.spanId).toBe(dispatch.spanContext().spanId)
    expect(finished('ledger.credit')[0]?.parentSpanContext?.spanId).toBe(handler.spanContext().spanId)
    const storeCalls = spans
      .getFinishedSpans()
      .filter((span) => span.parentSpanContext?.spanId === dispatch.spanContext().spanId)
      .map((span) => span.name)
    expect(storeCalls).toEqual(expect.arrayContaining(['payhooks.store.claim', 'payhooks.store.complete']))

    // The job carried the receive span's context; the handler saw the event without it.
    const job = await inspect.getJob(jobIdFor('evt_otel_bullmq'))
    expect(job?.data).toMatchObject({
      _payhooks_trace: { traceparent: expect.stringContaining(receive.spanContext().spanId) },
    })
    expect(seen).toHaveLength(1)
    expect(Object.keys(seen[0] as object)).not.toContain('_payhooks_trace')
    expect(seen[0]).toMatchObject({ event_id: 'evt_otel_bullmq', event_type: 'transaction_settled' })
    expect(errors).toEqual([])

    metricExporter.reset()
    await reader.forceFlush()
    const dispatches = metricExporter
      .getMetrics()
      .flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics))
      .find((metric) => metric.descriptor.name === 'payhooks.dispatches')
    expect(dispatches?.dataPoints).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          attributes: {
            'payhooks.outcome': 'processed',
            'payhooks.event.type': 'transaction_settled',
            'payhooks.dispatch.source': 'queue',
          },
        }),
      ]),
    )
  })

  it('keeps the trace context out of dead letters, and queues no trace field without telemetry', async () => {
    const { receiver, workerReceiver, queue, inspect } = setup({ attempts: 1 })
    workerReceiver.on('transaction_settled', () => {
      throw new Error('ledger down')
    })
    await deliver(receiver, 'evt_otel_dead')
    const [letter] = await until(async () => {
      const letters = await queue.deadLetters()
      return letters.length > 0 ? letters : undefined
    }, 'the dead letter')
    expect(letter?.eventId).toBe('evt_otel_dead')
    expect(Object.keys(letter?.event ?? {})).not.toContain('_payhooks_trace')
    expect(JSON.parse(new TextDecoder().decode(letter?.body))).not.toHaveProperty('_payhooks_trace')
    expect((await inspect.getJob(jobIdFor('evt_otel_dead')))?.data).toHaveProperty('_payhooks_trace')

    const plain = setup({ receiverTelemetry: false, workerTelemetry: false })
    plain.workerReceiver.on('transaction_settled', () => {})
    await deliver(plain.receiver, 'evt_otel_plain')
    const job = await until(() => plain.inspect.getJob(jobIdFor('evt_otel_plain')), 'the job')
    expect(job.data).not.toHaveProperty('_payhooks_trace')
  })

  it('runs a traced job on a worker whose receiver has no telemetry', async () => {
    const { receiver, workerReceiver, inspect, errors } = setup({ workerTelemetry: false })
    const seen: unknown[] = []
    workerReceiver.on('transaction_settled', (event) => {
      seen.push(event)
    })
    await deliver(receiver, 'evt_otel_mixed')
    await until(async () => (await inspect.getJobState(jobIdFor('evt_otel_mixed'))) === 'completed', 'the job')
    expect(seen).toEqual([expect.objectContaining({ event_id: 'evt_otel_mixed' })])
    expect(Object.keys(seen[0] as object)).not.toContain('_payhooks_trace')
    expect(finished('payhooks.dispatch')).toEqual([])
    expect(errors).toEqual([])
  })
})
