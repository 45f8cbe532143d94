import {
  type Attributes,
  type Context,
  context,
  type Link,
  type MeterProvider,
  metrics,
  propagation,
  type Span,
  SpanKind,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api'
import type { Telemetry, WebhookError } from '@payhooks/core'
import { extract } from './carrier.js'
import { type Instruments, instrumentsOf } from './instruments.js'
import { Scope, type Source } from './scope.js'

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
      if (error.code === 'handler_timeout') {
        const attributes: Attributes = {}
        if (error.eventType !== undefined) attributes['payhooks.event.type'] = error.eventType
        currentMeters().handlerTimeouts.add(1, attributes)
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
    watch(gauges) {
      const provider = options.meterProvider ?? metrics.getMeterProvider()
      const meter = provider.getMeter(INSTRUMENTATION_NAME, INSTRUMENTATION_VERSION)
      meter
        .createObservableGauge('payhooks.deliveries.in_flight', {
          description: 'Deliveries and dispatches running now.',
          unit: '{delivery}',
        })
        .addCallback((result) => result.observe(gauges.inFlight()))
      meter
        .createObservableGauge('payhooks.deliveries.waiting', {
          description: 'Deliveries and dispatches waiting for an event slot (maxConcurrentEvents).',
          unit: '{delivery}',
        })
        .addCallback((result) => result.observe(gauges.waiting()))
      meter
        .createObservableGauge('payhooks.handlers.hung', {
          description:
            'Runs whose handlers overran maxRunMs and still run, each holding its event, ordering key and slot: alert on any, restart once they hold every slot.',
          unit: '{run}',
        })
        .addCallback((result) => result.observe(gauges.hung()))
      const { heldKeys, parkedLetters, healthChecks, overrunning, quarantined, paused, alerts } = gauges
      if (alerts) {
        meter
          .createObservableGauge('payhooks.alerts.firing', {
            description:
              'Alerts firing now, by payhooks.alert.name and payhooks.alert.severity (silence, signature_failures, store_memory...): alert on any above 0.',
            unit: '{alert}',
          })
          .addCallback((result) => {
            const firing = new Map<string, { name: string; severity: string; count: number }>()
            for (const { name, severity } of alerts()) {
              const key = `${name} ${severity}`
              const entry = firing.get(key) ?? { name, severity, count: 0 }
              entry.count++
              firing.set(key, entry)
            }
            for (const { name, severity, count } of firing.values()) {
              result.observe(count, { 'payhooks.alert.name': name, 'payhooks.alert.severity': severity })
            }
          })
      }
      // A receiver older than the bulkheads has neither.
      if (overrunning) {
        meter
          .createObservableGauge('payhooks.handlers.overrunning', {
            description:
              'Runs whose handlers still run deadlineMs after their claim (their delivery answered 503 deadline_exceeded), hung ones included: the first sign of a handler that ignores its signal.',
            unit: '{run}',
          })
          .addCallback((result) => result.observe(overrunning()))
      }
      if (quarantined) {
        meter
          .createObservableGauge('payhooks.event_types.quarantined', {
            description:
              'Event types quarantined by the bulkheads (too many of their runs overrunning deadlineMs): their deliveries are answered 503 quarantined.',
            unit: '{type}',
          })
          .addCallback((result) => result.observe(quarantined()))
      }
      if (paused) {
        const pausedTypes = new Set<string>()
        meter
          .createObservableGauge('payhooks.event_types.paused', {
            description:
              "Event types an operator paused (webhooks.pause; '*' every type), by payhooks.event.type: 1 while paused. Their deliveries are parked as paused letters, or answered 503 paused; 0 once resumed.",
            unit: '{type}',
          })
          .addCallback((result) => {
            // A type once paused reads 0 after its resume (a series left unobserved would keep its last 1).
            const now = new Set(paused())
            for (const eventType of now) pausedTypes.add(eventType)
            for (const eventType of pausedTypes) {
              result.observe(now.has(eventType) ? 1 : 0, { 'payhooks.event.type': eventType })
            }
          })
      }
      if (healthChecks) {
        meter
          .createObservableGauge('payhooks.health.check', {
            description:
              'Each check of health(): 1 passing, 0 failing, by payhooks.health.check (its name) and payhooks.health.severity (error fails readiness; warning, such as an evicting maxmemory-policy or no persistence, does not).',
            unit: '1',
          })
          .addCallback(async (result) => {
            for (const check of (await healthChecks()) ?? []) {
              result.observe(check.ok ? 1 : 0, {
                'payhooks.health.check': check.name,
                'payhooks.health.severity': check.severity ?? 'error',
              })
            }
          })
      }
      if (parkedLetters) {
        meter
          .createObservableGauge('payhooks.dead_letters.parked', {
            description:
              'Dead letters parked now, waiting for a replay. Absent when the dead-letter store cannot count them.',
            unit: '{event}',
          })
          .addCallback(async (result) => {
            const parked = await parkedLetters()
            if (parked !== undefined) result.observe(parked)
          })
      }
      if (heldKeys) {
        meter
          .createObservableGauge('payhooks.ordering.keys_held', {
            description:
              'Ordering keys held now by a running event (up to 1000); their other events wait. Absent when the store cannot list them.',
            unit: '{key}',
          })
          .addCallback(async (result) => {
            const held = await heldKeys()
            if (held !== undefined) result.observe(held)
          })
      }
    },
    alert({ name, severity, firing }) {
      currentMeters().alerts.add(1, {
        'payhooks.alert.name': name,
        'payhooks.alert.severity': severity,
        'payhooks.alert.firing': firing,
      })
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
