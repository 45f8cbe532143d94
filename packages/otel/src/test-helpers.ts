// Shared by the kit's tests; not part of the build (tsconfig excludes it).
import { context, metrics, propagation, trace } from '@opentelemetry/api'
import {
  AggregationTemporality,
  type DataPoint,
  InMemoryMetricExporter,
  MeterProvider,
  type MetricReader,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import {
  InMemorySpanExporter,
  NodeTracerProvider,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-node'
import { createWebhooks, type RawDelivery, type Webhooks, type WebhooksOptions } from '@payhooks/core'
import { signedDelivery } from '@payhooks/testing'
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { INSTRUMENTATION_NAME, openTelemetry } from './index.js'

/** The data points of the kit's metric `name`, collected now through `reader` into `exporter` (emptied first). */
export async function collectPoints(
  exporter: InMemoryMetricExporter,
  reader: MetricReader,
  name: string,
): Promise<DataPoint<unknown>[]> {
  exporter.reset()
  await reader.forceFlush()
  return exporter
    .getMetrics()
    .flatMap((resource) => resource.scopeMetrics)
    .filter((scope) => scope.scope.name === INSTRUMENTATION_NAME)
    .flatMap((scope) => scope.metrics)
    .filter((metric) => metric.descriptor.name === name)
    .flatMap((metric) => metric.dataPoints as DataPoint<unknown>[])
}

export const secret = 'whsec_otel_test'

/**
 * The global SDK, as an application registers it (openTelemetry() without options finds it): registered before the
 * calling file's tests, taken down after them; its spans are emptied after each test. Call it at the top of a file.
 */
export function globalSdk() {
  const spans = new InMemorySpanExporter()
  const metricExporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 })
  const meterProvider = new MeterProvider({ readers: [reader] })
  beforeAll(() => {
    tracerProvider.register()
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

  const named = (name: string) => spans.getFinishedSpans().filter((span) => span.name === name)
  const only = (name: string): ReadableSpan => {
    const found = named(name)
    expect(found.map((span) => span.name)).toEqual([name])
    return found[0] as ReadableSpan
  }
  const childrenOf = (parent: ReadableSpan) =>
    spans.getFinishedSpans().filter((span) => span.parentSpanContext?.spanId === parent.spanContext().spanId)
  /** The data points of metric `name`, collected now (cumulative since the provider started). */
  const points = (name: string): Promise<DataPoint<unknown>[]> => collectPoints(metricExporter, reader, name)
  /** The value of the counter point whose attributes include `attributes`, summed over the matching points. */
  const count = async (name: string, attributes: Record<string, unknown>): Promise<number> => {
    const matching = (await points(name)).filter((point) =>
      Object.entries(attributes).every(([key, value]) => point.attributes[key] === value),
    )
    return matching.reduce((sum, point) => sum + (point.value as number), 0)
  }
  return { spans, tracerProvider, meterProvider, named, only, childrenOf, points, count }
}

/** Receives `event`, signed with `signWith` (default {@link secret}). */
export async function deliver(webhooks: Pick<Webhooks<unknown>, 'receive'>, event: unknown, signWith = secret) {
  const { body, headers } = await signedDelivery(event, signWith)
  const delivery: RawDelivery = { method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] }
  return webhooks.receive(delivery)
}

/** A receiver on {@link secret} whose telemetry is openTelemetry() on the global SDK. */
export function receiver(options: Partial<WebhooksOptions> = {}) {
  return createWebhooks({ secret, logger: { error() {} }, telemetry: openTelemetry(), ...options })
}
