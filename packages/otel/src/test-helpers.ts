import type { DataPoint, InMemoryMetricExporter, MetricReader } from '@opentelemetry/sdk-metrics'
import { INSTRUMENTATION_NAME } from './index.js'

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
