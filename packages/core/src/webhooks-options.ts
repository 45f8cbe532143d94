import type { AlertsOptions } from './alerts/types.js'
import type { BulkheadOptions } from './bulkheads/options.js'
import type { DeadLetterStore } from './dead-letters/types.js'
import type { ProxyArrivalOptions } from './http/proxy-arrival.js'
import type { Journal } from './journal/types.js'
import type { Logger } from './logging/log.js'
import type { OrderingRules } from './ordering/types.js'
import type { PauseStore } from './pause/types.js'
import type { SchemaMapOption } from './schemas/events.js'
import type { WebhookStore } from './store.js'
import type { Telemetry } from './telemetry/telemetry.js'
import type { EventMap, SecretOption, WebhookQueue } from './types.js'

/** Options of {@link createWebhooks}. `C` is the store's part of the handler context, inferred from `store`. */
export interface WebhooksOptions<S extends SchemaMapOption = {}, C extends object = {}> {
  /**
   * The subscription's `signature_secret`. Several secrets are tried in turn (rotation, or several
   * subscriptions posting to one route), each a string or `{ secret, label }`; a function may pick them per
   * request. Which one verified is `context.verifiedWith` (see docs/guide/secret-rotation.md).
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
   * Behind a proxy that buffers request bodies (nginx does by default), the receiver sees a request only once the
   * proxy has all of it, so its deadline would start late. Name the header in which the proxy writes the time it
   * received the request (and overwrites any the client sent): the deadline then counts from there, and a request
   * already past it is answered 408 `body_timeout` at once, nothing run. A time in the future counts as now, so it
   * never extends the deadline; a missing, unreadable or implausible one is ignored and warned about. Never set it
   * where clients reach the receiver without that proxy: they could shorten their own deadline. See "Behind a
   * proxy" in docs/guide/production.md.
   *
   * @example
   * // nginx: set $arrival $msec; proxy_set_header X-Request-Start "t=$arrival";
   * const webhooks = createWebhooks({ secret, proxyArrival: { header: 'x-request-start' } })
   * @default none: the deadline counts from the receiver's own arrival time
   */
  proxyArrival?: ProxyArrivalOptions
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
   * How long an event's handlers may run, from its claim, before they are told to stop: their `context.signal` is
   * aborted with a `HandlerTimeoutError` (reported to `onError`, code `handler_timeout`) and the run counts as
   * hung (`stats().hung`, the `hung_handlers` health check) until it settles. A handler still running keeps its event: its claim (renewed), its `ordering` key and
   * its `maxConcurrentEvents` slot stay held, so the service's retries are answered 409 `in_progress` and nothing runs the event beside it; only the
   * end of the process lets the lease run out and another delivery run it. A handler that stops on the signal
   * (throws) releases the event for the next retry; one that succeeds late marks it done. Longer than
   * `deadlineMs`, at most 2_147_483_647 (a timer's limit); `Infinity` never aborts the signal nor counts runs hung.
   *
   * @example
   * // Handlers that call a slow ledger: allow them an hour.
   * const webhooks = createWebhooks({ secret, store: memoryStore(), maxRunMs: 3_600_000 })
   * @default 900_000 (15 minutes, the default leaseMs)
   */
  maxRunMs?: number
  /**
   * The most events this receiver handles at once (each from its claim to its done marker), so a burst cannot
   * take every connection of a pool the store shares with your handlers. A delivery beyond it waits for a slot,
   * claiming nothing, and is answered 503 `busy` with `retry-after`, nothing run, as soon as it can no longer
   * finish before its deadline: when the deadline leaves less than 1.5 times the expected run (a moving average of
   * recent ones), at arrival or when a slot frees, or at the deadline if no slot frees. Slots go in arrival order,
   * or newest first once the oldest waiter has waited a quarter of its deadline (adaptive LIFO), so under overload
   * the handlers that run are the ones whose answer still counts. `dispatch` and `replay` wait for a slot too, with
   * no deadline. `Infinity` sets no limit.
   *
   * @example
   * // Pool of 20 shared with the rest of the app: at most 8 webhook events at once.
   * const webhooks = createWebhooks({ secret, store: postgresStore(pool), maxConcurrentEvents: 8 })
   * @default the store's `maxConcurrentEvents` (`postgresStore`: its pool's `max - 1`), else `Infinity`
   */
  maxConcurrentEvents?: number
  /**
   * Bulkheads between event types, so one type whose handlers hang cannot take every slot of
   * `maxConcurrentEvents` (on every instance) while the others are answered 503 `busy`. Each type may hold at most
   * its share of the slots (half by default, at least 1); a delivery of a type holding its share waits for one of
   * its own slots, claiming nothing, or is answered 503 `busy`, while the others' deliveries go on. A run whose
   * handlers still run `deadlineMs` after the claim counts as overrunning at once (`stats().overrunning`, the
   * `overrunning_handlers` health check, `payhooks.handlers.overrunning`); once `quarantineAfter` of a type's runs
   * overrun (by default its whole share) the type is quarantined: reported to `onError` (`QuarantinedError`), its
   * deliveries answered 503 `quarantined` at once (parked on the service's last tries with a durable `deadLetters`),
   * until one of those runs settles. With `maxConcurrentEvents` unbounded there are no slots to share, and only a
   * `quarantineAfter` given here applies. `false` turns them off. See "Bulkheads" in docs/guide/production.md.
   *
   * @example
   * // 8 slots: any one type at most 4 of them, transaction_settled (most of the traffic) 6.
   * const webhooks = createWebhooks({
   *   secret,
   *   store: postgresStore(pool),
   *   maxConcurrentEvents: 8,
   *   bulkheads: { perType: { transaction_settled: 6 } },
   * })
   * @default `{ share: 0.5 }`: each type at most half the slots (at least 1), quarantined once its share overruns
   */
  bulkheads?: BulkheadOptions | false
  /**
   * Queue mode: once verified and parsed, an event is handed to this queue and answered 200 at once;
   * a worker later runs the handlers through {@link Webhooks.dispatch}. Without it, handlers run
   * inline and the answer waits for them.
   */
  queue?: WebhookQueue
  /**
   * Where signed events that cannot be handled are parked instead of disappearing once the service stops
   * retrying: one whose schema refuses it, one whose handlers fail (or overrun `maxRunMs`) when it was signed over
   * 71 hours ago (the service's last tries), one then still run by another delivery (a hung handler: an
   * `EventHeldError`), and, with `ordering`, one then held back by its key (another event's claim holds it: a
   * `KeyHeldError`); both kept as `handler_failed` letters. With a durable store (`redisDeadLetterStore` from `@payhooks/redis`) the event is
   * answered 200 `parked` once stored; with `memoryDeadLetterStore()` it is kept for inspection but answered as
   * before (422, 500, 409), since a restart loses it. Either way the failure is reported to `onError`. Replay with
   * {@link Webhooks.replay}.
   *
   * @example
   * const webhooks = createWebhooks({ secret, store: redisStore(redis), deadLetters: redisDeadLetterStore(redis) })
   * @default none: refused events are answered non-2XX and the service retries them for 72 hours
   */
  deadLetters?: DeadLetterStore
  /**
   * Where failures go when no `onError` listener is registered, and warnings (likely mistakes, each logged once:
   * see "Logs" in docs/guide/operating.md) always, to `warn`, else `error`. A logger with `info`, such as `console` or pino,
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
  /**
   * Whether the receiver runs its health checks (`webhooks.health()`) once soon after it is made, without
   * delaying any delivery, and logs each failed one with its fix: Redis down, a Postgres migration or the
   * dead-letter table missing, Redis allowed to evict keys.
   * @default true
   */
  checkAtStart?: boolean
  /**
   * Ordering rules per event type (spec 6.1: messages can arrive out of order): the key of what the events change
   * and the time to order them by. The store keeps, per key, the newest event handled, and runs the events of one key
   * one at a time; handlers see it in `context.ordering` and may skip superseded events (`on(type, handler, {
   * skipSuperseded: true })`). Needs a store that keeps fences (`store.ordering`: `memoryStore`, `redisStore`,
   * `postgresStore`); `createWebhooks` throws with any other. See docs/guide/ordering.md.
   *
   * @example
   * const webhooks = createWebhooks({
   *   secret,
   *   ordering: {
   *     transaction_settled: { key: (e) => e.data.transaction_id, at: (e) => e.data.settlement_date },
   *     transaction_returned: { key: (e) => e.data.transaction_id, at: (e) => e.data.settlement_date },
   *   },
   * })
   * @default none: events are handled in the order they arrive
   */
  ordering?: OrderingRules<EventMap<NoInfer<S>>>
  /**
   * Where every answer to a signed delivery is journaled (its time, status, outcome, instance, duration, which
   * secret verified it, and the event's id, type and `created_at`; never the body or a secret), so any instance
   * sharing it, a board-only process too, can answer "did we get evt_X, and what did we answer?" through
   * `webhooks.events`. Unsigned and wrongly signed requests write nothing; copies of one event past the first 3 in a
   * minute are counted, not kept one by one. Written in batches off the hot path (every 250 ms), a refused write
   * tried again with backoff: an answer still buffered when the process dies is lost, and a full buffer (10 000)
   * drops the oldest copies first and records how many it dropped; the journal is an account, not the source of
   * truth. `memoryJournal()` here, `redisJournal` in `@payhooks/redis`, `postgresJournal` in
   * `@payhooks/postgres`.
   *
   * @example
   * const webhooks = createWebhooks({ secret, journal: memoryJournal(), instance: 'web-1' })
   * @default none: nothing is journaled and `webhooks.events` rejects
   */
  journal?: Journal
  /**
   * Where operators' pauses are kept (`webhooks.pause(type, { reason })`, `resume`, `paused`): every receiver
   * sharing the store stops running handlers for a paused type within about a second (the store's `refreshMs`),
   * reading its own copy of the pauses on the hot path, never the store. While a type is paused, its signed
   * deliveries are verified, then parked as `paused` letters with a durable `deadLetters` store (answered 200
   * `parked`, replayed by `resume`), else answered 503 `paused` so the service retries them; other types run as
   * usual. `redisPauseStore` (`@payhooks/redis`) or `postgresPauseStore` (`@payhooks/postgres`) for a fleet. See
   * "Pausing an event type" in docs/guide/operating.md.
   *
   * @example
   * const webhooks = createWebhooks({
   *   secret,
   *   store: redisStore(redis),
   *   deadLetters: redisDeadLetterStore(redis),
   *   pauses: redisPauseStore(redis),
   * })
   * @default memoryPauseStore(): pauses of this receiver only, forgotten on restart
   */
  pauses?: PauseStore
  /**
   * The name this receiver's answers carry in the journal.
   * @default the host name and process id (`web-7f9c:4121`)
   */
  instance?: string
  /**
   * The alerts the receiver raises about itself (`webhooks.onAlert`): no verified delivery for a while
   * (`silence`, off until given a limit), a run of deliveries no secret verifies (`signatureFailures`: a secret
   * rotated in the service's portal and not here), dead letters piling up, hung handlers, a Redis near `maxmemory`,
   * the journal dropping answers, and the service's subscription inactive or pointing elsewhere (`subscription`,
   * off until given the API client). Each is raised once and resolved once, logged, sent to telemetry and shown by
   * `health()` while firing. Checked on an unref'd timer (every 5 s; store and API reads less often), never on a
   * delivery's path. `false` turns them all off.
   *
   * @example
   * createWebhooks({ secret, alerts: { silence: { silenceMs: 6 * 3_600_000 }, journalDropping: false } })
   * @default signatureFailures, deadLettersGrowing, handlersHung, storeMemory and journalDropping on
   */
  alerts?: AlertsOptions | false
}
