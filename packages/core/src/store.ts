import type { TransactionAbortedError } from './errors/transaction-aborted.js'
import type { HealthCheck } from './health/types.js'
import type { HeldOrderingKey, OrderingMark, OrderingPosition } from './ordering/types.js'

/**
 * Outcome of {@link WebhookStore.claim}. `digest`, on `done` and `processing`, is the body digest the claim that
 * handled (or is handling) the event was made with, from a store that keeps it; absent otherwise. A store may keep
 * only its first 64 bits in a done marker (16 hex characters, as `redisStore` does): it then answers a claim whose
 * digest starts with them with that claim's own digest (the same body).
 */
export type ClaimResult =
  /**
   * This delivery owns the event until `complete`, `release` or the lease runs out. `newest`: with an ordering
   * `position`, the key's high-water mark when claimed (absent when no event of the key was handled yet).
   * `fencingToken`: with a `position`, a whole number greater than that of every earlier claim of the key, in every
   * instance sharing the store (`context.ordering.token`).
   */
  | { status: 'claimed'; token: string; newest?: OrderingMark; fencingToken?: number }
  /** The event was handled already: answer 2XX without running handlers. */
  | { status: 'done'; digest?: string }
  /**
   * Another delivery holds a live claim; `retryAfterMs` is how long its lease still runs, when known. With an
   * ordering `position`, `keyHeldSince` says the event waits for its ordering key, held by another event's claim
   * since then (milliseconds since the epoch), rather than being handled itself: its 409 names the key.
   */
  | { status: 'processing'; retryAfterMs?: number; digest?: string; keyHeldSince?: number }

type MaybePromise<T> = T | Promise<T>

/** Outcome of {@link WebhookStore.transaction}. */
export type TransactionOutcome =
  /** The handlers succeeded; their writes and the done marker were committed together. */
  | 'committed'
  /** `work` resolved false (a handler failed): everything was rolled back; the claim is still held. */
  | 'rolled_back'
  /** The token no longer held the claim when the marker was to be written: everything was rolled back. */
  | 'lost'

/**
 * Where payhooks records which events it has handled, so each `event_id` runs its handlers once.
 *
 * A claim is a lease with an owner token: only the holder may `extend`, `complete` or `release` it, and if
 * the holder dies the lease expires so the service's next retry is processed. Implementations must make
 * `claim` atomic across everything that shares the store. Any method may throw or reject when the
 * backing service is unavailable; payhooks then answers 503 and acknowledges nothing.
 *
 * `Context` is what the store adds to the context handlers receive (besides `signal`): `{}` for a plain
 * dedupe store, `{ db: PoolClient }` for `@payhooks/postgres`, whose handlers write inside the store's
 * transaction. {@link createWebhooks} infers it from its `store` option.
 */
export interface WebhookStore<Context extends object = {}> {
  /**
   * How long the store keeps a done marker, in milliseconds: at least the service's 72-hour retry window. The
   * receiver's `maxEventAgeMs` defaults to it, so an event the store may have forgotten is never run on its own
   * word (it is parked or refused instead), and a manual resend within the retention is handled. Optional only
   * for stores written before it existed (the receiver then assumes 73 hours); `storeContract` requires it.
   * @example
   * const store: WebhookStore = { retentionMs: 7 * 24 * 3_600_000, claim, complete, release, extend }
   */
  readonly retentionMs?: number
  /** Optional set-up, called once before the first claim. */
  init?(): MaybePromise<void>
  /**
   * Atomically claims `eventId` for `leaseMs` milliseconds, unless it is done or claimed by a live
   * holder.
   *
   * `digest` identifies the delivery's exact body: the first 16 bytes of its SHA-256, as 32 lower-case hex
   * characters (absent when the caller has no body, such as a queue worker). A store that supports conflict
   * detection keeps it with the claim it makes, then with the done marker that claim's `complete` (or
   * `transaction`) writes, and returns the kept one as `digest` when it answers `done` or `processing`; the
   * receiver then reports a copy of the event with other bytes as an `EventConflictError`. A store that
   * ignores it keeps working, without that report.
   */
  claim(eventId: string, leaseMs: number, digest?: string, position?: OrderingPosition): MaybePromise<ClaimResult>
  // --- ordering fences (issue 24) ---
  /**
   * Whether the store keeps ordering fences, so a receiver may declare `ordering` rules. Such a store, given a
   * `position` with `claim`: holds the position's key for the claim (another claim of an event of the same key is
   * answered `processing` with the rest of that lease, so two events of one key never run at once), answers the
   * key's high-water mark as `newest` and a fencing token that only grows per key as `fencingToken`, renews the key
   * with `extend`, frees it with `release`, and on `complete` (or in `transaction`, with the done marker) moves the
   * mark to this event when it is newer (by `at`, then event type, then event id), then frees the key. A mark is
   * kept at least the store's retention. A claim whose lease ran out neither renews, completes nor moves the mark,
   * whether or not another claim took the key since.
   * @default false: a receiver with `ordering` rules refuses the store at start
   */
  readonly ordering?: boolean
  /**
   * Optional, for a store that keeps ordering fences: the ordering keys held right now by a live claim (lease not run
   * out), at most `limit` of them (a whole number from 1 to 1000), those held longest first (by `since`, then
   * key), for `webhooks.heldKeys()` and the console. Costs at most about `limit` entries read, however many keys
   * the store holds or has marks for. Never creates anything.
   * @example
   * const held = await store.heldKeys?.({ limit: 20 })
   * for (const h of held ?? []) console.log(h.key, h.eventId, Date.now() - h.since.getTime(), 'ms')
   */
  heldKeys?(options: { limit: number }): MaybePromise<HeldOrderingKey[]>
  // --- end ordering fences ---
  /**
   * Renews the claim for `leaseMs` milliseconds from now if `token` still holds it; returns false when
   * it no longer does (the lease ran out and another delivery claimed the event, or it was released or
   * completed). The receiver calls it while handlers run, every third of the lease, so a slow handler
   * keeps its claim. Optional only for stores written before it existed: without it the receiver warns
   * once, and handlers outliving `leaseMs` may run twice.
   */
  extend?(eventId: string, token: string, leaseMs: number): MaybePromise<boolean>
  /**
   * Marks the event done (kept for the store's retention, at least the service's 72-hour retry
   * window) if `token` still holds its claim, keeping the claim's `digest` with the marker. Returns false when
   * the claim was lost.
   */
  complete(eventId: string, token: string): MaybePromise<boolean>
  /** Drops the claim, if `token` still holds it, so a later delivery runs the handlers again. */
  release(eventId: string, token: string): MaybePromise<boolean>
  /**
   * Optional, for stores whose engine has transactions: runs `work` (the event's handlers) inside one, and
   * writes the done marker in it, if `token` still holds the claim, once `work` resolves true; so the
   * handlers' writes and the marker commit together or not at all. The receiver calls it after a
   * successful `claim`, instead of `complete`. `work` gets a fresh object each call, the store's part of
   * the handler context (the receiver adds `signal` to it); it resolves false when a handler failed, and
   * never rejects. Rejects when the store failed, after rolling back (or when the commit's own outcome
   * is unknown): the receiver then releases the claim and answers 503, even if a handler failed too. Rejects
   * with a {@link TransactionAbortedError} when the handlers resolved but left the transaction unable to
   * commit (an SQL error caught inside it): the receiver answers that as a handler failure.
   */
  transaction?: (
    eventId: string,
    token: string,
    work: (context: Context) => Promise<boolean>,
  ) => Promise<TransactionOutcome>
  /** Optional clean-up: close timers or connections the store owns. */
  shutdown?(): MaybePromise<void>
  /**
   * Optional: checks that the store can work, for `webhooks.health()` and the receiver's start-up check: its
   * backend answers (a check named after the store, with `latencyMs`), and what it needs exists (tables,
   * columns, settings). Resolves with named checks, each failed one with a `fix`; the receiver bounds the wait
   * and aborts `signal` when it stops waiting. Never puts a secret, a connection string or a driver's error
   * text in a check. Must not create anything (that is `init`'s job).
   * @example
   * health: async () => [{ name: 'mystore', ok: await ping(), fix: 'start the database' }]
   */
  health?(signal: AbortSignal): Promise<HealthCheck[]>
  /**
   * Optional: the most events this store serves at once without starving what shares its backend, for a store
   * drawing on a bounded resource (`postgresStore`: its pool's `max - 1`, so the app keeps a client). The
   * receiver's `maxConcurrentEvents` defaults to it; without it, to no limit. A positive whole number.
   */
  readonly maxConcurrentEvents?: number
}
