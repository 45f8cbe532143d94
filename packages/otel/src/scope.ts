import {
  type Attributes,
  type Context,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'
import type {
  EventConflictError,
  HandlerRun,
  StoreOperation,
  TelemetryEvent,
  TelemetryOutcome,
  TelemetryScope,
  VerifiedSecret,
} from '@payhooks/core'
import { inject } from './carrier.js'
import type { Instruments } from './instruments.js'
import { errorType, fail, observe } from './observe.js'

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

/** Outcomes that end an event's journey here: its age then is measured. */
const HANDLED = new Set(['processed', 'queued', 'parked'])

export type Source = 'receive' | 'queue' | 'replay'

/** One delivery, dispatch or replay: its span (when sampled) and its measurements. */
export class Scope implements TelemetryScope {
  private readonly context: Context
  private eventAttributes: Attributes = {}
  private eventType: string | undefined
  private readonly storeMs: Partial<Record<StoreOperation, number>> = {}
  private readonly started = performance.now()
  private createdAt: number | undefined

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
    const createdAt = typeof event.created_at === 'string' ? Date.parse(event.created_at) : Number.NaN
    this.createdAt = Number.isNaN(createdAt) ? undefined : createdAt
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
    return observe(span ? trace.setSpan(this.context, span) : this.context, call, (failure, value) => {
      if (operation === 'extend' && !failure)
        this.meters.leaseRenewals.add(1, { 'payhooks.lease.lost': value === false })
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
    if (this.source === 'receive') {
      this.meters.deliveries.add(1, attributes)
      this.meters.answerDuration.record((performance.now() - this.started) / 1000, attributes)
    } else this.meters.dispatches.add(1, { ...attributes, 'payhooks.dispatch.source': this.source })
    if (this.createdAt !== undefined && HANDLED.has(outcome)) {
      const age: Attributes = { 'payhooks.outcome': outcome, 'payhooks.dispatch.source': this.source }
      if (this.eventType !== undefined) age['payhooks.event.type'] = this.eventType
      this.meters.eventAge.record(Math.max(0, Date.now() - this.createdAt) / 1000, age)
    }
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
