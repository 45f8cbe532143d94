import type * as v from 'valibot'
import type { Alert, AlertListener } from './alerts/types.js'
import type { RawBody } from './crypto/crypto-provider.js'
import type { DeadLetterFilter, DeadLetters, ReplayOutcome } from './dead-letters/types.js'
import type { WebhookError } from './errors/index.js'
import type { HealthCheck, HealthOptions, HealthReport } from './health/types.js'
import type { Events } from './journal/types.js'
import type { HeldKeysOptions, HeldOrderingKey, OnOptions, Ordering } from './ordering/types.js'
import type { PauseControls } from './pause/types.js'
import type { DispatchOptions, DispatchOutcome, EnqueueOptions } from './queue/types.js'
import type { BuiltInSchemas, SchemaMap, SchemaMapOption, UnknownEvent } from './schemas/events.js'
import type { ReceiverStats } from './stats/index.js'
import type { SecretEntry, VerifiedSecret } from './verify/secrets.js'

export type { DispatchOptions, DispatchOutcome, EnqueueOptions } from './queue/types.js'

/** Looks up a request header by lower-case name. */
export type HeaderLookup = (name: string) => string | null | undefined

/** One or several signature secrets (each optionally labeled), or a function that picks them per request. */
export type SecretOption =
  | string
  | readonly SecretEntry[]
  | ((request: {
      getHeader: HeaderLookup
    }) => string | readonly SecretEntry[] | Promise<string | readonly SecretEntry[]>)

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
   * Called once by `createWebhooks` with the receiver, so an in-process queue can run
   * `receiver.dispatch` itself and report failures with `receiver.report`.
   */
  attach?(receiver: Pick<Webhooks<unknown>, 'dispatch' | 'report'>): void
  /**
   * Optional: checks that the queue can take events, for {@link Webhooks.health} and the start-up check, as
   * `WebhookStore.health` does for a store (its backend answers, with `latencyMs`; its settings). Bounded by the
   * receiver, which aborts `signal` when it stops waiting.
   * @example
   * health: async () => [{ name: 'myqueue', ok: await ping(), fix: 'start the broker' }]
   */
  health?(signal: AbortSignal): Promise<HealthCheck[]>
}

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
   * The client's address as the transport knows it (the socket's peer, or the framework's `req.ip` behind a
   * trusted proxy), used only to keep one sender's failures apart from another's: a flood of wrongly signed
   * requests from one address is logged once a second and spends its own share of the signature doctor's time,
   * so the lines and hints of every other sender still come through. Never answered, never parsed.
   * @default none: every request counts as from one source
   */
  remoteAddress?: string
  /**
   * Called when the deadline passes before a `body` promise settled: stop reading (the answer asks to close the
   * connection) and settle the promise. Without it the read goes on until the transport ends it.
   */
  stopReading?: () => void
}

/** Options of {@link Webhooks.close}. */
export interface CloseOptions {
  /**
   * How long to wait for deliveries, dispatches, replays and done markers still running. Then handlers still
   * running are told to stop (`context.signal` aborted); a run still going keeps its claim, renewed, until it
   * settles or the process ends, and the store is shut down once it settled.
   * Must be `>= 0` and finite: anything else makes `close` reject with a `RangeError` and leaves the receiver open.
   * @default 10_000
   */
  timeoutMs?: number
}

type KeysOfUnion<T> = T extends unknown ? keyof T : never
/** `K`'s schema in each branch of a conditional `schemas`, and `undefined` for a branch without one. */
type SchemaIn<S, K extends PropertyKey> = S extends unknown ? (K extends keyof S ? S[K] : undefined) : never
/** An event of `K` when no schema is given for it: the built-in one's output, else `data: unknown`. */
type Fallback<K extends string> = K extends keyof BuiltInSchemas ? v.InferOutput<BuiltInSchemas[K]> : UnknownEvent<K>
/** The outputs of the schemas a branch may give, and the fallback if a branch gives none. */
type EventOf<T, K extends string> =
  | (Exclude<T, undefined> extends infer D extends SchemaMap[string] ? v.InferOutput<D> : never)
  | (undefined extends T ? Fallback<K> : never)
/**
 * Typed events of a receiver, keyed by event type: the built-in schemas, replaced or extended by `S`. A
 * conditional `S` (`cond ? { payment_created: schema } : {}`) keeps every other type's event, and gives an event
 * of a type it sets in one branch only either output.
 */
export type EventMap<S extends SchemaMapOption = {}> = {
  [K in (keyof BuiltInSchemas | KeysOfUnion<S>) & string]: K extends KeysOfUnion<S>
    ? EventOf<SchemaIn<S, K>, K>
    : v.InferOutput<BuiltInSchemas[K & keyof BuiltInSchemas]>
}
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
   * or the lease ran out and another delivery took it), when the receiver shuts down (`close` timed out, a
   * `ClosingError`), or when the handlers overran `maxRunMs` (a `HandlerTimeoutError`). In the last two the claim
   * stays held, renewed, until they settle: a handler that fails on it has its event released for the retry.
   * Pass it to `fetch`, database calls and loops, so work stops once another run may take over, and a hung
   * call ends.
   */
  readonly signal: AbortSignal
  /**
   * Which secret verified the delivery: `{ index, label? }`. Undefined when the event did not come through this
   * receiver's check: a queue worker's `dispatch` (the queue carries the event, not how it was verified).
   */
  readonly verifiedWith?: VerifiedSecret | undefined
  /**
   * For an event type with an `ordering` rule: its key, its time, and whether a newer event of the same key was
   * handled already (`superseded`, and that event as `newest`). Undefined for other types.
   */
  readonly ordering?: Ordering | undefined
} & Extra

/** A handler registered with `on` or `onAny`: the event, and the {@link HandlerContext}. */
export type Handler<Event, Context = HandlerContext> = (event: Event, context: Context) => unknown
/** A listener registered with `onError`. */
export type ErrorListener = (error: WebhookError) => void

/** A webhook receiver built by {@link createWebhooks}; `C` is its store's part of the handler context. */
export interface Webhooks<E, C extends object = {}> extends PauseControls {
  /**
   * Runs `handler` for every event of `type`. Handlers of one event run concurrently; the event is
   * acknowledged only once all of them succeed. The second argument is the {@link HandlerContext}. With
   * `{ skipSuperseded: true }` the handler is not run for an event a newer one of its ordering key superseded.
   *
   * @example
   * webhooks.on('transaction_settled', async (event, { signal }) => {
   *   await ledger.credit(event.data.transaction_id, event.data.settlement_amount, { signal })
   * })
   */
  on<T extends (keyof E & string) | (string & {})>(
    type: T,
    handler: Handler<EventFor<E, T>, HandlerContext<C>>,
    options?: OnOptions,
  ): this
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
   * the body if it is still arriving: `deadlineMs` counts from this call (or from a trusted proxy's arrival time,
   * with the `proxyArrival` option). Never rejects.
   */
  receive(delivery: RawDelivery): Promise<WebhookResult>
  /**
   * {@link Webhooks.receive} with the answer handed to `send` instead of a promise, for adapters that write it
   * from a callback (no promise per request). `send` is called exactly once: at once when the answer is known
   * synchronously, else later (at the latest at the deadline). If `send` throws, that is reported to `onError`
   * as an {@link InternalError}. Never throws.
   *
   * @example
   * webhooks.respond({ body, getHeader }, ({ status, headers, body }) => res.writeHead(status, headers).end(body))
   */
  respond(delivery: RawDelivery, send: (result: WebhookResult) => void): void
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
  /**
   * Reports `error` to `onError` (or the logger) and returns the answer for it, for transport-level failures.
   * `remoteAddress` is the client's, as in {@link RawDelivery.remoteAddress}.
   */
  reject(error: WebhookError, remoteAddress?: string): WebhookResult
  /**
   * Shuts the receiver down: from now on deliveries are answered 503 `closing` (with `retry-after`, so the
   * service retries later) and `dispatch` rejects with {@link ClosingError}. Waits for the deliveries,
   * dispatches and replays already running, for done markers still retried in the background, and for the
   * stores' health checks under way (told to stop through their signal; `health()` starts none once closing), at
   * most `timeoutMs`. Handlers still running then have their `context.signal` aborted (a `ClosingError`) and a
   * moment (`timeoutMs`, at most 1 s) to stop. A run still going after that keeps its claim: this instance goes
   * on renewing it until the handlers settle (their event then marked done, or released, or parked on the
   * service's last tries) or the process ends (the lease then runs out and the service's retry runs the event).
   * A retry reaching another instance meanwhile is answered 409 `in_progress`: a handler is never run beside
   * itself. `close` resolves without waiting for such runs; the store's and the dead-letter store's `shutdown()`
   * are called once no work is left: before it resolves, or after the last of them settles. Keep a connection
   * you passed to a store open until the process exits: the renewals need it. Calling it again returns the
   * same promise. It rejects only when `timeoutMs` is not a finite number `>= 0` (a `RangeError`,
   * `close: timeoutMs must be >= 0`), and then the receiver stays open; once closing has begun it never rejects:
   * a failing `shutdown()` is reported to `onError` as a {@link StoreError}. Stop queue workers first, so they
   * do not dispatch into a closed receiver.
   *
   * @example
   * process.once('SIGTERM', async () => {
   *   server.close()
   *   await webhooks.close({ timeoutMs: 5000 })
   *   process.exit(0)
   * })
   */
  close(options?: CloseOptions): Promise<void>
  /**
   * Whether this instance can take deliveries: its own checks (`closing`, `event_slots`,
   * `hung_handlers` while a handler is hung past `maxRunMs`: an error once hung runs hold every slot) and its stores'
   * (`store.health`, `deadLetters.health`: reachable and latency, tables and migrations, Redis settings), each
   * bounded by `timeoutMs`. `ready` is false when a check of severity `error` failed; warnings are listed but
   * leave it true. Never rejects for a store that is down or slow (that is a failed check); rejects only for an
   * invalid `timeoutMs`. Serve it on a readiness route with `nodeHealth`, `expressHealth`, `koaHealth`,
   * `honoHealth` or Fastify's `healthPath`.
   *
   * @example
   * const { ready, checks } = await webhooks.health({ timeoutMs: 1000 })
   * if (!ready) console.error(checks.filter((check) => !check.ok).map((check) => check.name))
   */
  health(options?: HealthOptions): Promise<HealthReport>
  /**
   * The ordering keys held right now by a live claim, longest held first (`store.heldKeys`): which event holds
   * each, since when, until when its lease runs, and its fencing token. A key held for long means its other events
   * wait (409 `key_held`) behind a slow or stuck handler. Resolves `undefined` when the store cannot list them (a
   * store without `heldKeys`, such as a custom one written before it existed). Rejects with a {@link StoreError}
   * (`held keys`) when the store fails or has not answered within `timeoutMs`, and with a `RangeError` for a
   * `limit` that is not a whole number from 1 to 1000.
   *
   * @example
   * const held = await webhooks.heldKeys({ limit: 20 })
   * for (const { key, eventId, since } of held ?? []) {
   *   console.log(key, eventId, `held for ${Date.now() - since.getTime()} ms`)
   * }
   */
  heldKeys(options?: HeldKeysOptions): Promise<HeldOrderingKey[] | undefined>
  /**
   * The first step of a shutdown behind a load balancer: from now on {@link Webhooks.health} reports not ready
   * (check `draining`), so the readiness route answers 503 and the balancer stops sending here, while deliveries
   * that still arrive are handled as before (answering them 503 `closing` would delay each event by the service's
   * hourly retry). Then wait a grace for the balancer to notice (a few of its probe periods), stop the server
   * accepting, and call {@link Webhooks.close}, which drains what runs. Calling it again does nothing.
   *
   * @example
   * process.once('SIGTERM', async () => {
   *   webhooks.drain()
   *   await new Promise((resolve) => setTimeout(resolve, 10_000))
   *   server.close()
   *   await webhooks.close({ timeoutMs: 5000 })
   *   process.exit(0)
   * })
   */
  drain(): void
  /**
   * The `journal`'s account of what the fleet answered: an event's timeline (`get`), answers newest first
   * (`list`), answers per minute by outcome for every instance together (`counts`). Rejects when no `journal` was
   * configured (`events.enabled` is false then).
   *
   * @example
   * const timeline = await webhooks.events.get('evt_123')
   * console.log(timeline?.handledAt, timeline?.answers.map((answer) => `${answer.status} ${answer.instance}`))
   */
  readonly events: Events
  /**
   * This process's deliveries, counted in memory since the receiver was made (nothing is shared between
   * instances; for all of them, use the OpenTelemetry metrics of `@payhooks/otel`): answers by outcome per minute
   * over the last hour, answer latency p50/p99 over the hour (from the request's first byte, as the deadline
   * counts it), events in flight and waiting for a slot now, conflicts in the hour, the events the service is
   * retrying (answered non-2XX here, not 2XX since) with the oldest of them, and each secret's verifications per
   * hour over the last 72 hours with when it was last used, to retire an old one. Recording costs each delivery
   * a few array and map updates, and no allocation.
   *
   * @example
   * const { deliveries, latency, retrying, secrets } = webhooks.stats()
   * console.log(deliveries.total.processed ?? 0, 'processed in the last hour; p99', latency.p99Ms, 'ms')
   * if (retrying.oldest) console.warn('still retried:', retrying.oldest.eventId, retrying.oldest.createdAt)
   * const old = secrets.usage.find((secret) => secret.index === 1)
   * if (old && old.total === 0) console.log('secret 1 unused for 72 hours here: last used', old.lastUsedAt)
   */
  stats(): ReceiverStats
  /**
   * Calls `listener` with every alert the receiver raises about itself (`firing: true`) and resolves (`firing:
   * false`): see the `alerts` option. A listener that throws or rejects is logged, and the others still run.
   *
   * @example
   * webhooks.onAlert((alert) => {
   *   if (alert.firing) pager.notify(`${alert.name} (${alert.severity}): ${alert.message}`)
   * })
   */
  onAlert(listener: AlertListener): this
  /**
   * The alerts firing now, oldest first (empty with `alerts: false`).
   *
   * @example
   * for (const alert of webhooks.alerts()) console.warn(alert.name, alert.since, alert.message)
   */
  alerts(): Alert[]
  /** Effective options, for adapters. */
  readonly maxBodyBytes: number
  readonly deadlineMs: number
}
