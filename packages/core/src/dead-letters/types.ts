import type { WebhookError } from '../errors.js'
import type { HealthCheck } from '../health/types.js'

type MaybePromise<T> = T | Promise<T>

/**
 * Why an event was parked: its schema refused it, its handlers failed on the service's last tries, or it arrived
 * older than `maxEventAgeMs` and not known as handled (`stale_event`: a manual resend after a long outage).
 */
export type DeadLetterCode = 'schema_mismatch' | 'handler_failed' | 'stale_event'

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
  /** Its handlers ran now and succeeded, or it had been handled already (`duplicate`): the letter is `replayed`. */
  | { eventId: string; status: 'processed' | 'duplicate' }
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
  /** Replays every parked letter matching `filter`, one after the other, oldest first. */
  replayAll(filter?: DeadLetterFilter): Promise<ReplayOutcome[]>
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
