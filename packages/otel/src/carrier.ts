import {
  type Context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  type SpanContext,
  trace,
} from '@opentelemetry/api'
import type { TraceCarrier } from '@payhooks/core'

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

function traceparent({ traceId, spanId, traceFlags }: SpanContext): string {
  return `00-${traceId}-${spanId}-${(traceFlags & 0xff).toString(16).padStart(2, '0')}`
}

/**
 * The trace context of `context` as headers: through the application's propagator (W3C trace context and baggage
 * with the Node SDK's defaults, B3 or others if configured), plus a W3C `traceparent` when the propagator wrote
 * none (no propagator registered), so the link survives either way. Undefined when there is nothing to carry.
 */
export function inject(context: Context): TraceCarrier | undefined {
  const carrier: TraceCarrier = {}
  propagation.inject(context, carrier)
  const spanContext = trace.getSpanContext(context)
  if (carrier.traceparent === undefined && spanContext && isSpanContextValid(spanContext)) {
    carrier.traceparent = traceparent(spanContext)
  }
  return Object.keys(carrier).length > 0 ? carrier : undefined
}

/** The context `carrier` describes (its baggage, and its span context when there is one), read back as injected. */
export function extract(carrier: TraceCarrier): { context: Context; spanContext: SpanContext | undefined } {
  const context = propagation.extract(ROOT_CONTEXT, carrier)
  let spanContext = trace.getSpanContext(context)
  if (!spanContext || !isSpanContextValid(spanContext)) {
    const match = TRACEPARENT.exec(carrier.traceparent ?? '')
    const parsed = match && {
      traceId: match[1] as string,
      spanId: match[2] as string,
      traceFlags: Number.parseInt(match[3] as string, 16),
      isRemote: true,
    }
    spanContext = parsed && isSpanContextValid(parsed) ? parsed : undefined
  }
  return { context, spanContext }
}
