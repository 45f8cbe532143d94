import type { WebhookError } from '../errors/index.js'
import type { HealthCheck } from '../health/types.js'

type MaybePromise<T> = T | Promise<T>

/**
 * Why an event was parked: its schema refused it, its handlers failed on the service's last tries, it arrived
 * older than `maxEventAgeMs` and not known as handled (`stale_event`: a manual resend after a long outage), or its
 * type was paused by an operator (`paused`: `webhooks.pause`, replayed by `webhooks.resume`).
 */
export type DeadLetterCode = 'schema_mismatch' | 'handler_failed' | 'stale_event' | 'paused'

/** What the receiver hands {@link DeadLetterStore.park}: one signed event it could not handle. */
export interface ParkedEvent {
  /** The event's `event_id`; a store keeps one dead letter per id. */
  eventId: string
  eventType: string
  /** The exact bytes received, signature-checked; a replay verifies them again. */
  body: Uint8Array
  /** The request headers a replay needs (lower-case names): `service-hmac-sha256`, and `content-type` when sent. */
  headers: Record<string, string>
  code: DeadLetterCode
  /** One line, as reported to `onError` (the schema issue, or the handler's error message). */
  reason: string
  /** The event's signed `created_at`, when it has a valid one. */
  createdAt: Date | undefined
  /** When this parking happened. */
  parkedAt: Date
}

/** A parked event as a {@link DeadLetterStore} keeps it. */
export interface DeadLetter extends ParkedEvent {
  /** When the event was first parked; `parkedAt` is the latest time. */
  firstParkedAt: Date
  /** How many times it was parked (the service may deliver it again before it is parked durably). */
  parkCount: number
  /** `parked` until a replay handled it (or found it handled already). */
  status: 'parked' | 'replayed'
  /** When a replay handled it. */
  replayedAt: Date | undefined
}

/** Which dead letters {@link DeadLetters.replayAll} replays; every given field must match. */
export interface DeadLetterFilter {
  eventType?: string
  code?: DeadLetterCode
  /** Parked (latest `parkedAt`) at or after this time. */
  parkedAfter?: Date
  /** Parked (latest `parkedAt`) before this time. */
  parkedBefore?: Date
  /**
   * The event's signed `created_at` at or after this time (a letter without one never matches): the events created
   * during an outage, whenever they were parked.
   * @example
   * await webhooks.deadLetters.count?.({ createdAfter: new Date('2026-11-28T02:00Z'), createdBefore: new Date('2026-11-28T05:00Z') })
   */
  createdAfter?: Date
  /** The event's signed `created_at` before this time (a letter without one never matches). */
  createdBefore?: Date
}

/** A page of dead letters for {@link DeadLetterStore.list}: newest `parkedAt` first. */
export interface DeadLetterQuery extends DeadLetterFilter {
  /**
   * Which letters: still `parked`, already `replayed`, or `all`.
   * @default 'parked'
   */
  status?: 'parked' | 'replayed' | 'all'
  /**
   * Most letters returned.
   * @default 100
   */
  limit?: number
  /**
   * Matching letters skipped first (after `after`, when both are given). Costs grow with the offset: use `after`
   * to walk far.
   * @default 0
   */
  offset?: number
  /**
   * Keyset paging: only letters past this position in the listing's order, as {@link deadLetterCursor} made it
   * from the last letter of the page before. Opaque; any page, however deep, costs the same.
   * @example
   * const page = await webhooks.deadLetters.list({ limit: 50 })
   * const next = await webhooks.deadLetters.list({ limit: 50, after: deadLetterCursor(page.at(-1)!) })
   */
  after?: string
  /**
   * `newest` first (`parkedAt` then `eventId`, descending) or `oldest` first (both ascending).
   * @default 'newest'
   */
  order?: 'newest' | 'oldest'
}

/** Which letters {@link DeadLetterStore.count} counts: a list's filter and status, without its page. */
export type DeadLetterCountQuery = Omit<DeadLetterQuery, 'limit' | 'offset' | 'after' | 'order'>

/**
 * Where a receiver parks the signed events it cannot handle, so that none disappears when the service stops
 * retrying after 72 hours: the exact bytes, the headers a replay needs, the reason and the times. Pass one as
 * `createWebhooks({ deadLetters })`; `webhooks.deadLetters.replay(eventId)` verifies a letter's bytes again and runs it.
 *
 * One letter per `event_id`, so the interface maps onto one SQL table keyed by it (columns `event_id` primary
 * key, `event_type`, `body` bytea, `headers` jsonb, `code`, `reason`, `created_at`, `first_parked_at`,
 * `parked_at`, `park_count`, `status`, `replayed_at`): `park` is an `INSERT ... ON CONFLICT (event_id) DO
 * UPDATE ... WHERE status = 'parked' AND body = EXCLUDED.body RETURNING *` (reading the row when it returns
 * none), `list` a `WHERE ... ORDER BY parked_at DESC, event_id DESC LIMIT ... OFFSET ...`.
 *
 * A letter must be stored when `park` resolves: the receiver then answers the service 2XX (when `durable`),
 * and the service never sends that event again. Any method may throw or reject when the backing service is
 * unavailable; a failed `park` leaves the answer non-2XX, so the service retries. Parked letters are kept
 * until replayed; a store may forget replayed ones after a while (after which a delivery of that event, older
 * than the dedupe store's retention too, is parked anew).
 *
 * @example
 * const webhooks = createWebhooks({ secret, store: redisStore(redis), deadLetters: redisDeadLetterStore(redis) })
 * // Development: memoryDeadLetterStore(), not durable, so parked events are still answered non-2XX.
 */
export interface DeadLetterStore {
  /**
   * Whether parked letters survive a restart of this process. Only a durable store lets the receiver answer
   * 2XX for an event it parked; with a store that is not, the answer stays non-2XX and the service retries.
   */
  readonly durable: boolean
  /** Optional set-up, called once before the first other call (again after a failure). */
  init?(): MaybePromise<void>
  /**
   * Stores `event` under its `eventId`, atomically, and returns the letter as it stands after the call. With no
   * letter for the id, a new one (`parked`, `parkCount` 1). With a `parked` letter of the same body bytes, its
   * headers, code, reason, `createdAt` and `parkedAt` are replaced, `parkCount` goes up by one and
   * `firstParkedAt` stays. Any other existing letter is left exactly as it is: a `replayed` one (the event was
   * handled: the letter is the durable evidence of it, so it never becomes `parked`, nor replayable, again), and a
   * `parked` one of other body bytes (the first bytes parked are kept; the receiver reports the copy as an
   * `EventConflictError`). The receiver tells these apart from the returned letter: `status` `replayed`, or a
   * `body` other than the one given.
   *
   * A store written before this returned nothing; the receiver then takes the event as parked.
   */
  // biome-ignore lint/suspicious/noConfusingVoidType: a store whose park returns Promise<void> must still fit
  park(event: ParkedEvent): MaybePromise<DeadLetter | void>
  /** The letter of `eventId`, whatever its status, or undefined. */
  get(eventId: string): MaybePromise<DeadLetter | undefined>
  /**
   * Letters matching `query`, newest `parkedAt` first (ties: `eventId` descending), or oldest first with
   * `order: 'oldest'`; past the `after` position when given (see {@link DeadLetterStore.keysetPaging}).
   */
  list(query?: DeadLetterQuery): MaybePromise<DeadLetter[]>
  /**
   * Whether `list` honours `after` and `order` (payhooks' stores do). Replaying all walks a store that does page
   * by page; one that does not is read whole (its ids) when the run starts.
   */
  readonly keysetPaging?: boolean
  /**
   * Marks the letter `replayed` at `at`, after a replay handled it (or found it handled already). Returns false
   * when there is no letter for `eventId`.
   */
  markReplayed(eventId: string, at: Date): MaybePromise<boolean>
  /**
   * Optional: forgets the letter of `eventId` for good, whatever its status (an operator's decision that the
   * event needs no handling). Returns false when there was none. Without it, tools offer no delete.
   */
  delete?(eventId: string): MaybePromise<boolean>
  /**
   * Optional: how many letters match `query` (by default the `parked` ones), as {@link DeadLetterStore.list} would
   * return them all, without reading their bodies. Without it, tools count by listing.
   * @example
   * const parked = await store.count?.({ code: 'handler_failed' })
   */
  count?(query?: DeadLetterCountQuery): MaybePromise<number>
  /** Optional clean-up: close timers or connections the store owns. Called by `webhooks.close()`. */
  shutdown?(): MaybePromise<void>
  /**
   * Optional: checks that the store can park letters, for `webhooks.health()` (as `WebhookStore.health`):
   * its backend answers, its table and columns exist.
   */
  health?(signal: AbortSignal): Promise<HealthCheck[]>
}

/** What a replay of one dead letter did. */
export type ReplayOutcome =
  /**
   * Its handlers ran now and succeeded, or it had been handled already (`duplicate`): the letter is `replayed`.
   * For a `duplicate`, `handledAt` says when it was handled where something recorded it: the letter's `replayedAt`
   * when another replay handled it, else the journal's first handled answer (a receiver with a `journal`).
   * Undefined when only the done marker tells, which keeps no time.
   */
  | { eventId: string; status: 'processed' | 'duplicate'; handledAt?: Date }
  /** Handed back to a queue, whose workers run it (BullMQ dead letters). */
  | { eventId: string; status: 'queued' }
  /** Another delivery or worker holds the event's claim: try again after `retryAfterMs`. */
  | { eventId: string; status: 'in_progress'; retryAfterMs?: number }
  /** No dead letter for this id (or not parked any more, for a queue's dead letters). */
  | { eventId: string; status: 'not_found' }
  /**
   * The bytes failed verification (`invalid_signature` when they were altered or the secret changed), the schema
   * still refuses them, a handler failed, or the store did: the letter stays parked.
   */
  | { eventId: string; status: 'failed'; error: WebhookError }

/** One batch of a replay of all: see {@link DeadLetters.replayBatch}. */
export interface ReplayBatchRequest {
  /** Which letters; a run replays those parked (and matching) when it started. */
  filter?: DeadLetterFilter
  /** The cursor the batch before answered; none to start (or join) a run. */
  cursor?: string | null | undefined
  /**
   * When starting: the count the operator confirmed. The run starts (or joins the one going) only when its own
   * count, taken as it started, is this; else a `ReplayRunError` `changed` with the count.
   */
  confirmCount?: number
  /**
   * Most letters this batch tries.
   * @default 50
   */
  limit?: number
  /**
   * Letters replayed at once. Replays take none of the slots of live deliveries (`maxConcurrentEvents`): this is
   * their own budget, and they pause while live deliveries wait for a slot.
   * @default 4
   */
  concurrency?: number
}

/** What a replay of all did to its letters, one count per outcome; `tried` is their sum. */
export interface ReplayCounts {
  /** Letters tried (each once): the sum of `processed`, `duplicate`, `queued`, `inProgress`, `failed`, `notFound`. */
  tried: number
  processed: number
  duplicate: number
  /**
   * Of `duplicate`: handled by another replay or delivery after this run started (another operator's run, a
   * console, a resend), as the letter's `replayedAt` or the journal tells.
   */
  duplicateMeanwhile: number
  /**
   * Of `duplicate`: handled before this run started, as the journal tells. The rest of `duplicate` (neither this
   * nor `duplicateMeanwhile`) was found only by the done marker, which keeps no time: a receiver with a `journal`
   * tells them apart.
   */
  duplicateBefore: number
  /** Handed back to a queue. */
  queued: number
  /** Being handled elsewhere (a delivery or worker holds its claim): not failed, and not tried again by this run. */
  inProgress: number
  /** Their replay failed: still parked. */
  failed: number
  /** Gone by the time they were tried (deleted elsewhere). */
  notFound: number
}

/**
 * What a replay of all did, as figures: the one definition of a report's fields (the board's JSON and page use it
 * too, with `null` for `undefined`).
 */
export interface ReplayReport extends ReplayCounts {
  /** In a caller's report: letters of the run other callers (consoles) tried since this one joined; 0 in the run's. */
  triedByOthers: number
  /** The run's letters when it started (parked, matching, parked before it), when the store can count. */
  total: number | undefined
  /**
   * Once the run is over: letters of its set no run tried, because they left it meanwhile (deleted, replayed or
   * parked again elsewhere), plus `notFound`. Undefined before.
   */
  gone: number | undefined
  /** At most this many letters of the set are still to try (`0` only once every one was reached). */
  remaining: number | undefined
  /** Whether the run is over: every letter of its set reached, no batch under way. */
  done: boolean
}

/** The answer of {@link DeadLetters.replayBatch}. */
export interface ReplayBatch {
  /** This batch's outcomes, oldest letter first. */
  outcomes: ReplayOutcome[]
  /** This caller's figures, over its batches of the run. */
  report: ReplayReport
  /** The whole run's figures, over every caller that joined it. */
  run: ReplayReport
  /** For the next batch; null once the walk is over for this caller. */
  cursor: string | null
  /**
   * The run's letters: the filter it was started with, its `parkedBefore` the moment it started (or the filter's,
   * when earlier). The same for every batch of the run, whatever filter a request continuing it with a cursor
   * carries: what an audit of the batch records. Optional for other implementations.
   */
  filter?: DeadLetterFilter
}

/**
 * Dead letters as tools see them: list, show and replay, whatever keeps them. `webhooks.deadLetters` is one
 * (over its {@link DeadLetterStore}), `bullmqDeadLetters(queue)` from `@payhooks/bullmq` another (over the
 * queue's failed jobs), so the same `payhooks dead-letters` commands serve both.
 *
 * @example
 * for (const letter of await webhooks.deadLetters.list({ eventType: 'transaction_settled' })) {
 *   console.log(letter.eventId, letter.code, letter.reason)
 * }
 * const outcome = await webhooks.deadLetters.replay('evt_123') // { eventId, status: 'processed' } once fixed
 */
export interface DeadLetters {
  /** Letters matching `query`, newest first; by default the `parked` ones, 100 at most. */
  list(query?: DeadLetterQuery): Promise<DeadLetter[]>
  /** The letter of `eventId`, or undefined. */
  get(eventId: string): Promise<DeadLetter | undefined>
  /**
   * Replays one letter. Resolves with what happened (`duplicate`, running nothing, for a letter already
   * `replayed`); rejects only when the letters cannot be read at all.
   */
  replay(eventId: string): Promise<ReplayOutcome>
  /**
   * Replays every letter matching `filter` parked before the call, oldest first, each once, `concurrency` at a
   * time (see {@link ReplayBatchRequest.concurrency}); resolves with every outcome and, from payhooks' receivers,
   * the run's {@link ReplayReport} as `report`.
   * @example
   * const { report } = await webhooks.deadLetters.replayAll({ code: 'handler_failed' })
   * console.log(`${report.processed} processed, ${report.failed} failed (still parked), ${report.gone} gone`)
   */
  replayAll(
    filter?: DeadLetterFilter,
    options?: { concurrency?: number },
  ): Promise<ReplayOutcome[] & { report?: ReplayReport }>
  /**
   * Optional: one batch of a replay of all letters matching `request.filter`, for tools that show progress (the
   * board): without `cursor` it starts a run (fixed at that moment; or joins the run of the same filter already
   * going in this process, taking the next letters of the same walk), with the `cursor` the last batch answered
   * it continues. Rejects with a `ReplayRunError` when another filter's run holds the store (`busy`), the count
   * is not the one confirmed (`changed`), or the cursor was not signed by this process (`forged`) or was used
   * already or outlived its run (`stale`).
   */
  replayBatch?(request: ReplayBatchRequest): Promise<ReplayBatch>
  /**
   * Forgets the letter of `eventId` for good; resolves false when there was none. Present only when the store
   * can delete (payhooks' memory, Redis and PostgreSQL stores can).
   */
  delete?(eventId: string): Promise<boolean>
  /**
   * How many letters match `query` (by default the `parked` ones). Present only when the store can count
   * (payhooks' memory, Redis and PostgreSQL stores, and BullMQ's dead letters, can).
   * @example
   * const parked = await webhooks.deadLetters.count?.({ eventType: 'transaction_settled' })
   */
  count?(query?: DeadLetterCountQuery): Promise<number>
  /**
   * The store's own `durable`: `false` for letters that live in this process's memory (`memoryDeadLetterStore`),
   * which another process, such as the `payhooks dead-letters` CLI, never sees. Undefined when unknown.
   */
  readonly durable?: boolean
}
