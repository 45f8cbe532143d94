import type { Alert } from '../alerts/types.js'
import type { EventConflictError, WebhookError } from '../errors/index.js'
import type { HealthCheck } from '../health/types.js'
import type { VerifiedSecret } from '../verify/secrets.js'
import type { StoreOperation } from './store-operations.js'

export type { StoreOperation } from './store-operations.js'

/** Trace context headers (W3C `traceparent`, `tracestate`, `baggage`) a queue carries with an event. */
export type TraceCarrier = Record<string, string>

/** The part of an event telemetry sees. */
export interface TelemetryEvent {
  event_id: string
  event_type: string
  /** The event's signed `created_at` (ISO 8601), when known: for its age at handling. */
  created_at?: unknown
}

/** What a receiver lets telemetry read at any time, for gauges. Given once, to {@link Telemetry.watch}. */
export interface TelemetryGauges {
  /** Deliveries and dispatches running now (holding an event slot, or running without a limit). */
  inFlight(): number
  /** Deliveries and dispatches waiting for an event slot (`maxConcurrentEvents`). */
  waiting(): number
  /** Runs whose handlers overran `maxRunMs` and still run (hung), holding their event. */
  hung(): number
  /**
   * Runs whose handlers still run `deadlineMs` after their claim, hung ones included. Optional: a receiver older
   * than the bulkheads has none.
   */
  overrunning?(): number
  /** Event types quarantined by the receiver's `bulkheads` now. Optional, as {@link TelemetryGauges.overrunning}. */
  quarantined?(): number
  /**
   * The event types paused now (`webhooks.pause`, `'*'` for every type), as this process last read them. Optional,
   * as {@link TelemetryGauges.overrunning}.
   */
  paused?(): string[]
  /**
   * The ordering keys held now (`webhooks.heldKeys`, counted up to its cap of 1000), or undefined when the store
   * cannot list them, fails, or has not answered within a second. Never rejects.
   */
  heldKeys?(): Promise<number | undefined>
  /**
   * The dead letters parked now (`webhooks.deadLetters.count`), or undefined when the store fails or has not
   * answered within a second. Absent when there is no dead-letter store, or it cannot count. Never rejects.
   */
  parkedLetters?(): Promise<number | undefined>
  /**
   * The checks of `webhooks.health()` (start-up warnings such as an evicting `maxmemory-policy` or no persistence
   * among them), or undefined when the report fails. Never rejects.
   */
  healthChecks?(): Promise<readonly HealthCheck[] | undefined>
  /** The alerts firing now (`webhooks.alerts()`). Optional: a receiver older than the alerts has none. */
  alerts?(): readonly Alert[]
}

/** One handler run, as {@link TelemetryScope.handler} describes it. */
export interface HandlerRun {
  /** Registered with `on(type)` or `onAny`. */
  kind: 'on' | 'any'
  /** Its position among the handlers of that kind (for `on`, of that type). */
  index: number
  /** The function's name; empty for anonymous functions. */
  name: string
}

/** How the work of a {@link TelemetryScope} ended. */
export interface TelemetryOutcome {
  /** `processed`, `duplicate`, `queued`, `parked`, `in_progress`, or the failure's code (`invalid_signature`...). */
  outcome: string
  /** The HTTP status answered; absent for dispatches and replays. */
  status?: number
  /** The failure, when there was one. */
  error?: WebhookError
}

/**
 * Observes one delivery, queued dispatch or replay. The receiver calls `event` once the event is verified, runs its
 * store calls and handlers through `store` and `handler` (which must return what the call returns, value or
 * promise, and rethrow what it throws), and calls `end` once: for a delivery, with its answer (at the deadline,
 * while handlers may still run and go on calling `store` and `handler`). No method may throw.
 */
export interface TelemetryScope {
  /** The event, once verified; with which secret verified it (deliveries and replays, not queue dispatches). */
  event(event: TelemetryEvent, verifiedWith?: VerifiedSecret): void
  store<T>(operation: StoreOperation, call: () => T): T
  handler<T>(run: HandlerRun, call: () => T): T
  /** In queue mode: the trace context the queue carries with the event, so its dispatch can link back. */
  carrier(): TraceCarrier | undefined
  /**
   * The event was handled (or is being handled) with a body other than this delivery's: it is answered as a
   * duplicate (or in progress) and `error` is reported besides (also through {@link Telemetry.failure}).
   * Optional, for implementations written before it.
   */
  conflict?(error: EventConflictError): void
  end(outcome: TelemetryOutcome): void
}

/**
 * Traces and metrics of a receiver, passed as `createWebhooks({ telemetry })`. `openTelemetry()` of
 * `@payhooks/otel` implements it on the OpenTelemetry API. Without one, the receiver calls nothing.
 *
 * @example
 * import { openTelemetry } from '@payhooks/otel'
 * const webhooks = createWebhooks({ secret, telemetry: openTelemetry() })
 */
export interface Telemetry {
  /**
   * A delivery starts (`receive`, `handle`, or an adapter's rejection). Returns undefined when nothing would be
   * recorded (no SDK registered), and the receiver then skips every other call for it.
   */
  receive(): TelemetryScope | undefined
  /** A dispatch starts: from a queue worker, with the carrier the receiver gave the queue, or a replay. */
  dispatch(
    event: TelemetryEvent,
    origin: { source: 'queue' | 'replay'; trace?: TraceCarrier },
  ): TelemetryScope | undefined
  /** A failure was reported (to `onError`, or the logger). */
  failure?(error: WebhookError): void
  /** Called once when the receiver is made, with what gauges may read. Optional. */
  watch?(gauges: TelemetryGauges): void
  /** A signed event was parked in the dead-letter store. */
  parked?(letter: { eventId: string; eventType: string; code: string; durable: boolean }): void
  /** An alert was raised (`firing: true`) or resolved (`firing: false`). Optional. */
  alert?(alert: Alert): void
}
