import type { RawBody } from './crypto/crypto-provider.js'
import type { DeadLetterFilter, DeadLetterStore, DeadLetters, ReplayOutcome } from './dead-letters/types.js'
import type { WebhookError } from './errors.js'
import type { Logger } from './log.js'
import type { BuiltInSchemas, EventsOf, SchemaMap, UnknownEvent } from './schemas.js'
import type { SecretEntry, VerifiedSecret } from './secrets.js'
import type { WebhookStore } from './store.js'
import type { Telemetry, TraceCarrier } from './telemetry.js'

/** Looks up a request header by lower-case name. */
export type HeaderLookup = (name: string) => string | null | undefined

/** One or several signature secrets (each optionally labeled), or a function that picks them per request. */
export type SecretOption =
  | string
  | readonly SecretEntry[]
  | ((request: {
      getHeader: HeaderLookup
    }) => string | readonly SecretEntry[] | Promise<string | readonly SecretEntry[]>)

/** Options of {@link createWebhooks}. `C` is the store's part of the handler context, inferred from `store`. */
export interface WebhooksOptions<S extends SchemaMap = {}, C extends object = {}> {
  /**
   * The subscription's `signature_secret`. Several secrets are tried in turn (rotation, or several
   * subscriptions posting to one route), each a string or `{ secret, label }`; a function may pick them per
   * request. Which one verified is `context.verifiedWith` (see "Rotating the secret" in the README).
   */
  secret: SecretOption
  /**
   * Where handled `event_id`s are recorded.
   * @default memoryStore()
   */
  store?: WebhookStore<C>
  /**
   * Schemas for further event types, or replacements for built-in ones, keyed by `event_type`.
   * Handlers for these types receive the schema's output type.
   */
  schemas?: S
  /**
   * Every request is answered within this many milliseconds of its arrival, whatever the handlers do: a body
   * still arriving then is answered 408 `body_timeout` and its connection closed, work still running 503
   * `deadline_exceeded`. The service gives up after 10 s, so values of 10 000 or more are rejected.
   * @default 5000
   */
  deadlineMs?: number
  /**
   * Bodies larger than this are answered 413 unread, and their connection closed.
   * @default 1_048_576 (1 MiB)
   */
  maxBodyBytes?: number
  /**
   * Signed events whose `created_at` is older than this run no handler: after the service's 72 hours of retries,
   * such a delivery is a manual resend after an outage, or a replay of a captured one once the store forgot it. One
   * the store knows as handled is answered as a duplicate (200); any other is parked with `deadLetters` (200
   * `parked` in a durable store, replayable with `webhooks.deadLetters.replay`), else answered 422 `stale_event` so the
   * service keeps it; both report a `StaleEventError`. Defaults to the store's `retentionMs`, so a store kept for 7
   * days takes resends up to 7 days old; a longer value is warned about at start (a resend of an event handled
   * before the store's retention would run twice). At least 72 hours, so no genuine retry is refused. `Infinity`
   * turns the check off. Events without `created_at` (`transaction_returned`) are never refused on age.
   * @default the store's `retentionMs`; 262_800_000 (73 hours) for a store that does not say it
   */
  maxEventAgeMs?: number
  /**
   * How far ahead of this receiver's clock a `created_at` may be. Beyond it the event is answered 503
   * `future_event` (reported as a `FutureEventError`) and handled on a later retry, once the clocks agree:
   * an event from the future would outlive its dedupe record. `Infinity` turns the check off.
   * @default 300_000 (5 minutes)
   */
  maxClockSkewMs?: number
  /**
   * How long a claim protects an event being handled. A crashed process's claim expires after this,
   * so keep it below the service's one-hour retry interval. While handlers run, the receiver renews
   * the claim every third of it (`store.extend`), so slow handlers keep it; if renewal fails, their
   * `context.signal` is aborted.
   * @default 900_000 (15 minutes)
   */
  leaseMs?: number
  /**
   * The most events this receiver handles at once (each from its claim to its done marker), so a burst cannot
   * take every connection of a pool the store shares with your handlers. A delivery beyond it waits for a slot,
   * in arrival order, claiming nothing; if none frees before its deadline it is answered 503 `busy` with
   * `retry-after`, nothing run. `dispatch` and `replay` wait for a slot too. `Infinity` sets no limit.
   *
   * @example
   * // Pool of 20 shared with the rest of the app: at most 8 webhook events at once.
   * const webhooks = createWebhooks({ secret, store: postgresStore(pool), maxConcurrentEvents: 8 })
   * @default the store's `maxConcurrentEvents` (`postgresStore`: its pool's `max - 1`), else `Infinity`
   */
  maxConcurrentEvents?: number
  /**
   * Queue mode: once verified and parsed, an event is handed to this queue and answered 200 at once;
   * a worker later runs the handlers through {@link Webhooks.dispatch}. Without it, handlers run
   * inline and the answer waits for them.
   */
  queue?: WebhookQueue
  /**
   * Where signed events that cannot be handled are parked instead of disappearing once the service stops
   * retrying: one whose schema refuses it, and one whose handlers fail when it was signed over 71 hours ago (the
   * service's last tries). With a durable store (`redisDeadLetterStore` from `@payhooks/redis`) the event is
   * answered 200 `parked` once stored; with `memoryDeadLetterStore()` it is kept for inspection but answered as
   * before (422, 500), since a restart loses it. Either way the failure is reported to `onError`. Replay with
   * {@link Webhooks.replay}.
   *
   * @example
   * const webhooks = createWebhooks({ secret, store: redisStore(redis), deadLetters: redisDeadLetterStore(redis) })
   * @default none: refused events are answered non-2XX and the service retries them for 72 hours
   */
  deadLetters?: DeadLetterStore
  /**
   * Where failures go when no `onError` listener is registered, and warnings (likely mistakes, each logged once:
   * see "Logging" in the README) always, to `warn`, else `error`. A logger with `info`, such as `console` or pino,
   * is called `error(fields, message)`: structured fields (`code`, `status`, `event_id`, `event_type`), never a
   * secret or a body. One with only `error` (and `warn`) gets one line.
   *
   * @example
   * import pino from 'pino'
   * const webhooks = createWebhooks({ secret, logger: pino() })
   * @default one readable line each on the console (`console.error`, `console.warn`)
   */
  logger?: Logger
  /**
   * Traces and metrics: `openTelemetry()` of `@payhooks/otel`. Without it the receiver measures nothing and pays
   * nothing.
   *
   * @example
   * import { openTelemetry } from '@payhooks/otel'
   * const webhooks = createWebhooks({ secret, telemetry: openTelemetry() })
   * @default none
   */
  telemetry?: Telemetry
}

/** The second argument of {@link WebhookQueue.enqueue}. */
export interface EnqueueOptions {
  /**
   * Trace context of the delivery (with `telemetry` set): keep it with the event and pass it back to
   * {@link Webhooks.dispatch}, so the worker's trace links to the delivery's.
   */
  trace?: TraceCarrier
}

/** The second argument of {@link Webhooks.dispatch}. */
export interface DispatchOptions {
  /** The trace context the queue was given with the event ({@link EnqueueOptions.trace}). */
  trace?: TraceCarrier
}

/**
 * A verified event: the parsed message whose signature checked out, as handlers, a queue and dead letters see it.
 */
export interface VerifiedEvent {
  event_type: string
  event_id: string
  [field: string]: unknown
}

/**
 * @deprecated Renamed {@link VerifiedEvent} (it types every verified event, queued or not); this alias goes in
 * the next minor version.
 */
export type QueuedEvent = VerifiedEvent

/**
 * Where queue mode puts verified events. `enqueue` resolves once the event is durably stored (or
 * already was: enqueueing the same `event_id` twice must not create two jobs) and rejects otherwise,
 * in which case the delivery is answered 503 and the service retries.
 */
export interface WebhookQueue {
  enqueue(event: VerifiedEvent, options?: EnqueueOptions): Promise<void>
  /**
   * Called once by {@link createWebhooks} with the receiver, so an in-process queue can run
   * `receiver.dispatch` itself and report failures with `receiver.report`.
   */
  attach?(receiver: Pick<Webhooks<unknown>, 'dispatch' | 'report'>): void
}

/** What {@link Webhooks.dispatch} did with an event. */
export type DispatchOutcome =
  | { status: 'processed' | 'duplicate' }
  /** Another delivery or worker holds the claim; try again after `retryAfterMs`. */
  | { status: 'in_progress'; retryAfterMs?: number }

/** What the receiver answers: adapters write this out as the HTTP response. */
export interface WebhookResult {
  status: number
  headers: Record<string, string>
  body: string
}

/** A delivery as the transport received it: the exact body bytes (or their promise) and a header lookup. */
export interface RawDelivery {
  /** HTTP method; anything but POST is answered 405. Omit when the transport already routed on it. */
  method?: string
  /**
   * The exact bytes received, never re-serialized JSON; or, while the body is still arriving, a promise of them,
   * so the deadline covers the read. A promise that rejects with a {@link WebhookError} (such as
   * `PayloadTooLargeError`) is answered with it.
   */
  body: RawBody | PromiseLike<RawBody>
  getHeader: HeaderLookup
  /**
   * Called when the deadline passes before a `body` promise settled: stop reading (the answer asks to close the
   * connection) and settle the promise. Without it the read goes on until the transport ends it.
   */
  stopReading?: () => void
}

/** Options of {@link Webhooks.close}. */
export interface CloseOptions {
  /**
   * How long to wait for deliveries and dispatches still running. Then handlers still running are told
   * to stop (`context.signal` aborted), their claims are released, and the store is shut down anyway.
   * Must be `>= 0` and finite: anything else makes `close` reject with a `RangeError` and leaves the receiver open.
   * @default 10_000
   */
  timeoutMs?: number
}

type Merge<S extends SchemaMap> = Omit<BuiltInSchemas, keyof S> & S
/** Typed events of a receiver, keyed by event type. */
export type EventMap<S extends SchemaMap = {}> = EventsOf<Merge<S>>
/** The event a handler of `T` receives: typed from its schema, or `data: unknown` for types without one. */
export type EventFor<E, T extends string> = T extends keyof E ? E[T] : UnknownEvent<T>
/** Any event a receiver can see. */
export type AnyEvent<E> = E[keyof E] | UnknownEvent

/**
 * The second argument of every handler. `Extra` is what the receiver's store adds, such as `db` (the
 * transaction's client) with `@payhooks/postgres`.
 */
export type HandlerContext<Extra extends object = {}> = {
  /**
   * Aborted when this run no longer holds the event's claim (its renewal failed: the store is down,
   * or the lease ran out and another delivery took it) or the receiver shut down (`close` timed out;
   * the claim is then released so the service's retry runs the event). Pass it to `fetch`, database
   * calls and loops, so work stops once another run may take over.
   */
  readonly signal: AbortSignal
  /**
   * Which secret verified the delivery: `{ index, label? }`. Undefined when the event did not come through this
   * receiver's check: a queue worker's `dispatch` (the queue carries the event, not how it was verified).
   */
  readonly verifiedWith?: VerifiedSecret | undefined
} & Extra

/** A handler registered with `on` or `onAny`: the event, and the {@link HandlerContext}. */
export type Handler<Event, Context = HandlerContext> = (event: Event, context: Context) => unknown
/** A listener registered with `onError`. */
export type ErrorListener = (error: WebhookError) => void

/** A webhook receiver built by {@link createWebhooks}; `C` is its store's part of the handler context. */
export interface Webhooks<E, C extends object = {}> {
  /**
   * Runs `handler` for every event of `type`. Handlers of one event run concurrently; the event is
   * acknowledged only once all of them succeed. The second argument is the {@link HandlerContext}.
   *
   * @example
   * webhooks.on('transaction_settled', async (event, { signal }) => {
   *   await ledger.credit(event.data.transaction_id, event.data.settlement_amount, { signal })
   * })
   */
  on<T extends (keyof E & string) | (string & {})>(type: T, handler: Handler<EventFor<E, T>, HandlerContext<C>>): this
  /** Runs `handler` for every event, whatever its type. */
  onAny(handler: Handler<AnyEvent<E>, HandlerContext<C>>): this
  /** Receives every failure as a typed {@link WebhookError}. Without one, failures are logged. */
  onError(listener: ErrorListener): this
  /**
   * Web-standard entry: verifies, dedupes and dispatches one delivery.
   *
   * @example
   * export default { fetch: (request: Request) => webhooks.handle(request) }
   */
  handle(request: Request): Promise<Response>
  /**
   * Lower-level entry for adapters: raw bytes and a header lookup in, status and JSON body out,
   * without building Request/Response objects. Call it as soon as the request arrives, with a promise of
   * the body if it is still arriving: `deadlineMs` counts from this call. Never rejects.
   */
  receive(delivery: RawDelivery): Promise<WebhookResult>
  /**
   * Runs the handlers of an already verified event under the store's claim, as the inline mode does:
   * for queue workers. With `maxConcurrentEvents` events running, it waits for a slot first. Resolves with
   * what happened; rejects with {@link HandlerError} (claim released), {@link StoreError}, or
   * {@link ClosingError} once {@link Webhooks.close} was called (waiting ones too). Errors are not
   * reported to `onError`: the caller decides. Pass the `trace` the queue was given with the event, if any.
   *
   * @example
   * const outcome = await webhooks.dispatch(job.event, { trace: job.trace })
   */
  dispatch(event: VerifiedEvent, options?: DispatchOptions): Promise<DispatchOutcome>
  /**
   * The letters of the `deadLetters` store: list, get, replay. Its methods reject when no store was configured,
   * and with {@link ClosingError} once {@link Webhooks.close} was called.
   *
   * @example
   * const parked = await webhooks.deadLetters.list({ code: 'schema_mismatch', limit: 20 })
   */
  readonly deadLetters: DeadLetters
  /**
   * Replays a dead letter: verifies its stored bytes against the current secrets and schemas, then runs it under
   * the store's claim, as a delivery would (so an event already handled is not run again: `duplicate`). The
   * letter is marked `replayed` once handled. Resolves with what happened; a failure (`status: 'failed'`) leaves
   * the letter parked and is not reported to `onError`: the caller decides.
   *
   * @deprecated The same function as `webhooks.deadLetters.replay`, which the dead-letter tools use: call that.
   * This alias goes in the next minor version.
   * @example
   * const outcome = await webhooks.deadLetters.replay('evt_123')
   * if (outcome.status === 'failed') console.error(outcome.error.message)
   */
  replay(eventId: string): Promise<ReplayOutcome>
  /**
   * Replays every parked letter matching `filter`, oldest first, one at a time.
   *
   * @deprecated The same function as `webhooks.deadLetters.replayAll`: call that. This alias goes in the next
   * minor version.
   * @example
   * const outcomes = await webhooks.deadLetters.replayAll({ eventType: 'transaction_settled', code: 'schema_mismatch' })
   */
  replayAll(filter?: DeadLetterFilter): Promise<ReplayOutcome[]>
  /** Reports `error` to the `onError` listeners, or logs it in one line when there are none. */
  report(error: WebhookError): void
  /** Reports `error` to `onError` (or the logger) and returns the answer for it, for transport-level failures. */
  reject(error: WebhookError): WebhookResult
  /**
   * Shuts the receiver down: from now on deliveries are answered 503 `closing` (with `retry-after`, so the
   * service retries later) and `dispatch` rejects with {@link ClosingError}. Waits for the deliveries and
   * dispatches already running, at most `timeoutMs`; handlers still running then have their
   * `context.signal` aborted and their claims released (so the service's retry runs those events), and
   * the store's `shutdown()` is called. Calling it again returns the same promise. It rejects only when
   * `timeoutMs` is not a finite number `>= 0` (a `RangeError`, `close: timeoutMs must be >= 0`), and then the
   * receiver stays open; once closing has begun it never rejects: a failing release or `shutdown()` is
   * reported to `onError` as a {@link StoreError}. Stop queue workers first, so they do not dispatch into a
   * closed receiver.
   *
   * @example
   * process.once('SIGTERM', async () => {
   *   server.close()
   *   await webhooks.close({ timeoutMs: 5000 })
   *   process.exit(0)
   * })
   */
  close(options?: CloseOptions): Promise<void>
  /** Effective options, for adapters. */
  readonly maxBodyBytes: number
  readonly deadlineMs: number
}
