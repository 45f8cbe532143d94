import {
  type Attributes,
  type Context,
  type Counter,
  context,
  createNoopMeter,
  type Histogram,
  type Link,
  type Meter,
  type MeterProvider,
  metrics,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api'
import type {
  EventConflictError,
  HandlerRun,
  StoreOperation,
  Telemetry,
  TelemetryEvent,
  TelemetryOutcome,
  TelemetryScope,
  VerifiedSecret,
  WebhookError,
} from '@payhooks/core'
import { extract, inject } from './carrier.js'

/** The instrumentation scope name of every span and metric: this package's name. */
export const INSTRUMENTATION_NAME = '@payhooks/otel'
/** This package's version, the instrumentation scope's version. */
export const INSTRUMENTATION_VERSION = '0.2.0'

/** Options of {@link openTelemetry}. */
export interface OpenTelemetryOptions {
  /**
   * Where spans go.
   * @default the global one (`trace.getTracerProvider()`), read at each delivery, so an SDK started later is used
   */
  tracerProvider?: TracerProvider
  /**
   * Where metrics go.
   * @default the global one (`metrics.getMeterProvider()`), read at each delivery, so an SDK started later is used
   */
  meterProvider?: MeterProvider
}

interface Instruments {
  /** False for the API's no-op meter: no SDK, so nothing to record. */
  readonly recording: boolean
  readonly deliveries: Counter
  readonly dispatches: Counter
  readonly handlerDuration: Histogram
  readonly storeDuration: Histogram
  readonly dedupeHits: Counter
  readonly storeErrors: Counter
  readonly deadLetters: Counter
  readonly conflicts: Counter
  readonly secretVerified: Counter
}

/** Seconds, from 1 ms to a minute: store calls take milliseconds, handlers up to the lease. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

function instrumentsOf(meter: Meter): Instruments {
  const advice = { explicitBucketBoundaries: DURATION_BUCKETS }
  return {
    recording: meter !== createNoopMeter(),
    deliveries: meter.createCounter('payhooks.deliveries', {
      description: 'Deliveries answered, by outcome and HTTP status.',
      unit: '{delivery}',
    }),
    dispatches: meter.createCounter('payhooks.dispatches', {
      description: 'Queued events dispatched by workers, and dead letters replayed, by outcome.',
      unit: '{dispatch}',
    }),
    handlerDuration: meter.createHistogram('payhooks.handler.duration', {
      description: 'Duration of each handler run.',
      unit: 's',
      advice,
    }),
    storeDuration: meter.createHistogram('payhooks.store.duration', {
      description: 'Duration of each store, queue and dead-letter store call.',
      unit: 's',
      advice,
    }),
    dedupeHits: meter.createCounter('payhooks.dedupe.hits', {
      description: 'Events found already handled, so their handlers did not run again.',
      unit: '{event}',
    }),
    storeErrors: meter.createCounter('payhooks.store.errors', {
      description: 'Store, queue and dead-letter store failures reported.',
      unit: '{error}',
    }),
    deadLetters: meter.createCounter('payhooks.dead_letters', {
      description: 'Signed events parked in the dead-letter store.',
      unit: '{event}',
    }),
    conflicts: meter.createCounter('payhooks.event.conflicts', {
      description: 'Copies of a handled (or running) event received with other bytes: answered as duplicates, not run.',
      unit: '{event}',
    }),
    secretVerified: meter.createCounter('payhooks.secret.verified', {
      description: 'Deliveries verified, by which secret of the list verified them: retire one once it stays at zero.',
      unit: '{delivery}',
    }),
  }
}

/** Span name and kind of each store call. */
const STORE_SPANS: Record<StoreOperation, readonly [string, SpanKind]> = {
  init: ['payhooks.store.init', SpanKind.INTERNAL],
  claim: ['payhooks.store.claim', SpanKind.INTERNAL],
  extend: ['payhooks.store.extend', SpanKind.INTERNAL],
  complete: ['payhooks.store.complete', SpanKind.INTERNAL],
  release: ['payhooks.store.release', SpanKind.INTERNAL],
  transaction: ['payhooks.store.transaction', SpanKind.INTERNAL],
  enqueue: ['payhooks.queue.enqueue', SpanKind.PRODUCER],
  park: ['payhooks.dead_letters.park', SpanKind.INTERNAL],
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function'

/** A short, low-cardinality name for what was thrown: its `code` (`ECONNREFUSED`), else its class name. */
function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return error instanceof Error ? error.name : '_OTHER'
}

function fail(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error))
  span.setAttribute('error.type', errorType(error))
  const message = error instanceof Error ? error.message : String(error)
  span.setStatus({ code: SpanStatusCode.ERROR, message: message.split('\n')[0] as string })
}

/** Runs `call` in `ctx`; `finish` is told once it returned, resolved, threw or rejected. */
function observe<T>(ctx: Context, call: () => T, finish: (failure?: { error: unknown }) => void): T {
  let result: T
  try {
    result = context.with(ctx, call)
  } catch (error) {
    finish({ error })
    throw error
  }
  if (!isThenable(result)) {
    finish()
    return result
  }
  return result.then(
    (value) => {
      finish()
      return value
    },
    (error: unknown) => {
      finish({ error })
      throw error
    },
  ) as T
}

type Source = 'receive' | 'queue' | 'replay'

/** One delivery, dispatch or replay: its span (when sampled) and its measurements. */
class Scope implements TelemetryScope {
  private readonly context: Context
  private eventAttributes: Attributes = {}
  private eventType: string | undefined
  private readonly storeMs: Partial<Record<StoreOperation, number>> = {}

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span | undefined,
    parent: Context,
    private readonly meters: Instruments,
    private readonly source: Source,
  ) {
    this.context = span ? trace.setSpan(parent, span) : parent
  }

  event(event: TelemetryEvent, verifiedWith?: VerifiedSecret): void {
    this.eventType = event.event_type
    this.eventAttributes = { 'payhooks.event.id': event.event_id, 'payhooks.event.type': event.event_type }
    this.span?.setAttributes(this.eventAttributes)
    if (!verifiedWith) return
    const secret: Attributes = { 'payhooks.secret.index': verifiedWith.index }
    if (verifiedWith.label !== undefined) secret['payhooks.secret.label'] = verifiedWith.label
    this.span?.setAttributes(secret)
    this.meters.secretVerified.add(1, secret)
  }

  store<T>(operation: StoreOperation, call: () => T): T {
    let span: Span | undefined
    if (this.span) {
      const [name, kind] = STORE_SPANS[operation]
      const attributes = { ...this.eventAttributes, 'payhooks.store.operation': operation }
      span = this.tracer.startSpan(name, { kind, attributes }, this.context)
    }
    const started = performance.now()
    return observe(span ? trace.setSpan(this.context, span) : this.context, call, (failure) => {
      const ms = performance.now() - started
      this.storeMs[operation] = (this.storeMs[operation] ?? 0) + ms
      const measured: Attributes = { 'payhooks.store.operation': operation }
      if (failure) measured['error.type'] = errorType(failure.error)
      this.meters.storeDuration.record(ms / 1000, measured)
      if (!span) return
      if (failure) fail(span, failure.error)
      span.end()
    })
  }

  handler<T>(run: HandlerRun, call: () => T): T {
    let span: Span | undefined
    if (this.span) {
      const attributes: Attributes = {
        ...this.eventAttributes,
        'payhooks.handler.kind': run.kind,
        'payhooks.handler.index': run.index,
      }
      if (run.name) attributes['code.function.name'] = run.name
      span = this.tracer.startSpan('payhooks.handler', { attributes }, this.context)
    }
    const started = performance.now()
    return observe(span ? trace.setSpan(this.context, span) : this.context, call, (failure) => {
      const measured: Attributes = {}
      if (this.eventType !== undefined) measured['payhooks.event.type'] = this.eventType
      if (failure) measured['error.type'] = errorType(failure.error)
      this.meters.handlerDuration.record((performance.now() - started) / 1000, measured)
      if (!span) return
      if (failure) fail(span, failure.error)
      span.end()
    })
  }

  carrier() {
    return this.span ? inject(this.context) : undefined
  }

  conflict(error: EventConflictError): void {
    if (!this.span) return
    this.span.setAttribute('payhooks.event.conflict', true)
    this.span.addEvent('payhooks.event_conflict', {
      'payhooks.body_digest.received': error.receivedDigest,
      'payhooks.body_digest.handled': error.handledDigest,
      'payhooks.event.in_progress': error.inProgress,
    })
  }

  end({ outcome, status, error }: TelemetryOutcome): void {
    const attributes: Attributes = { 'payhooks.outcome': outcome }
    if (this.eventType !== undefined) attributes['payhooks.event.type'] = this.eventType
    if (status !== undefined) attributes['http.response.status_code'] = status
    if (error) attributes['error.type'] = error.code
    if (this.source === 'receive') this.meters.deliveries.add(1, attributes)
    else this.meters.dispatches.add(1, { ...attributes, 'payhooks.dispatch.source': this.source })
    const duplicate = outcome === 'duplicate'
    if (duplicate) {
      this.meters.dedupeHits.add(1, this.eventType === undefined ? {} : { 'payhooks.event.type': this.eventType })
    }
    const span = this.span
    if (!span) return
    span.setAttributes(attributes)
    span.setAttribute('payhooks.duplicate', duplicate)
    const hint = (error as { hint?: { code: string } } | undefined)?.hint
    if (hint) span.setAttribute('payhooks.signature.hint', hint.code)
    for (const [operation, ms] of Object.entries(this.storeMs)) {
      span.setAttribute(`payhooks.store.${operation}.duration_ms`, ms)
    }
    // A server-side failure: 5XX answered, or a dispatch that failed. 4XX are the sender's, as for HTTP servers.
    if (error && (status === undefined || status >= 500)) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: error.message })
    }
    span.end()
  }
}

/**
 * OpenTelemetry traces and metrics for a receiver, on the application's SDK: pass it as `createWebhooks({ telemetry
 * })`. Uses only `@opentelemetry/api`; with no SDK registered every call is the API's no-op and the receiver skips
 * the rest of the delivery's telemetry.
 *
 * Spans: `payhooks.receive` per delivery (`payhooks.event.id`, `payhooks.event.type`, `payhooks.outcome`,
 * `http.response.status_code`, `payhooks.duplicate`, `payhooks.store.<operation>.duration_ms`), with children
 * `payhooks.store.<operation>`, `payhooks.queue.enqueue`, `payhooks.dead_letters.park` and one `payhooks.handler`
 * per handler (run in its span's context, so spans a handler makes nest under it). Queue workers' and replays'
 * runs are `payhooks.dispatch` (linked to the `payhooks.receive` span of the delivery that queued the event) and
 * `payhooks.replay`. Metrics: `payhooks.deliveries`, `payhooks.dispatches`, `payhooks.handler.duration`,
 * `payhooks.store.duration`, `payhooks.dedupe.hits`, `payhooks.store.errors`, `payhooks.dead_letters`,
 * `payhooks.event.conflicts`, `payhooks.secret.verified` (by `payhooks.secret.index` and `payhooks.secret.label`:
 * which secret verified each delivery, also on its span). A copy of a handled event with other bytes
 * (`EventConflictError`) adds a `payhooks.event_conflict` event with both body digests to its span, and
 * `payhooks.event.conflict: true`. A refused signature's span carries the doctor's `payhooks.signature.hint`.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { openTelemetry } from '@payhooks/otel'
 *
 * // The application starts the SDK (NodeSDK, or a tracer and meter provider of its own) before this runs.
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, telemetry: openTelemetry() })
 */
export function openTelemetry(options: OpenTelemetryOptions = {}): Telemetry {
  let tracerProvider: TracerProvider | undefined
  let tracer: Tracer | undefined
  let meterProvider: MeterProvider | undefined
  let meters: Instruments | undefined

  // Read at each use: the global providers change when an SDK is registered (or disabled and registered anew).
  const currentTracer = (): Tracer => {
    const provider = options.tracerProvider ?? trace.getTracerProvider()
    if (provider !== tracerProvider || !tracer) {
      tracerProvider = provider
      tracer = provider.getTracer(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION)
    }
    return tracer
  }
  const currentMeters = (): Instruments => {
    const provider = options.meterProvider ?? metrics.getMeterProvider()
    if (provider !== meterProvider || !meters) {
      meterProvider = provider
      meters = instrumentsOf(provider.getMeter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION))
    }
    return meters
  }
  const scope = (span: Span, parent: Context, source: Source, tracer: Tracer): Scope | undefined => {
    const instruments = currentMeters()
    const recording = span.isRecording()
    if (!recording && !instruments.recording) return undefined
    return new Scope(tracer, recording ? span : undefined, parent, instruments, source)
  }

  return {
    receive() {
      const parent = context.active()
      const tracer = currentTracer()
      return scope(tracer.startSpan('payhooks.receive', { kind: SpanKind.INTERNAL }, parent), parent, 'receive', tracer)
    },
    dispatch(event, { source, trace: carrier }) {
      let parent = context.active()
      const links: Link[] = []
      if (carrier) {
        const extracted = extract(carrier)
        if (extracted.spanContext) links.push({ context: extracted.spanContext })
        const baggage = propagation.getBaggage(extracted.context)
        if (baggage && !propagation.getBaggage(parent)) parent = propagation.setBaggage(parent, baggage)
      }
      const tracer = currentTracer()
      const span = tracer.startSpan(
        source === 'queue' ? 'payhooks.dispatch' : 'payhooks.replay',
        {
          kind: source === 'queue' ? SpanKind.CONSUMER : SpanKind.INTERNAL,
          links,
          attributes: { 'payhooks.dispatch.source': source },
        },
        parent,
      )
      const observed = scope(span, parent, source, tracer)
      observed?.event(event)
      return observed
    },
    failure(error: WebhookError) {
      if (error.code === 'event_conflict') {
        const attributes: Attributes = { 'payhooks.event.in_progress': error.status !== 200 }
        if (error.eventType !== undefined) attributes['payhooks.event.type'] = error.eventType
        currentMeters().conflicts.add(1, attributes)
        return
      }
      if (error.code !== 'store_unavailable') return
      const operation = (error as { operation?: unknown }).operation
      const attributes: Attributes = {
        'payhooks.store.operation': typeof operation === 'string' ? operation : '_OTHER',
      }
      if (error.eventType !== undefined) attributes['payhooks.event.type'] = error.eventType
      currentMeters().storeErrors.add(1, attributes)
    },
    parked({ eventType, code, durable }) {
      currentMeters().deadLetters.add(1, {
        'payhooks.event.type': eventType,
        'payhooks.dead_letter.code': code,
        'payhooks.dead_letter.durable': durable,
      })
    },
  }
}
