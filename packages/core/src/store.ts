import { createLog, type Logger } from './log.js'
import { type Marker, marker, markerDigest, markerExpiry } from './memory-marker.js'
import { markOf } from './ordering/marks.js'
import { MemoryFences } from './ordering/memory-fences.js'
import type { OrderingMark, OrderingPosition } from './ordering/types.js'
import { RETRY_INTERVAL_MS, RETRY_WINDOW_MS } from './service-contract.js'
import type { TransactionAbortedError } from './transaction-aborted.js'
import { check, inRange } from './validations.js'

/**
 * Outcome of {@link WebhookStore.claim}. `digest`, on `done` and `processing`, is the body digest the claim that
 * handled (or is handling) the event was made with, from a store that keeps it; absent otherwise.
 */
export type ClaimResult =
  /**
   * This delivery owns the event until `complete`, `release` or the lease runs out. `newest`: with an ordering
   * `position`, the key's high-water mark when claimed (absent when no event of the key was handled yet).
   */
  | { status: 'claimed'; token: string; newest?: OrderingMark }
  /** The event was handled already: answer 2XX without running handlers. */
  | { status: 'done'; digest?: string }
  /** Another delivery holds a live claim; `retryAfterMs` is how long its lease still runs, when known. */
  | { status: 'processing'; retryAfterMs?: number; digest?: string }

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
   * key's high-water mark as `newest`, renews the key with `extend`, frees it with `release`, and on `complete` (or
   * in `transaction`, with the done marker) moves the mark to this event when it is newer (by `at`, then event
   * type, then event id), then frees the key. A mark is kept at least the store's retention.
   * @default false: a receiver with `ordering` rules refuses the store at start
   */
  readonly ordering?: boolean
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
   * Optional: the most events this store serves at once without starving what shares its backend, for a store
   * drawing on a bounded resource (`postgresStore`: its pool's `max - 1`, so the app keeps a client). The
   * receiver's `maxConcurrentEvents` defaults to it; without it, to no limit. A positive whole number.
   */
  readonly maxConcurrentEvents?: number
}

/** The store {@link memoryStore} returns: synchronous, and it tells its size. */
export interface MemoryStore extends WebhookStore {
  claim(eventId: string, leaseMs: number, digest?: string, position?: OrderingPosition): ClaimResult
  extend(eventId: string, token: string, leaseMs: number): boolean
  complete(eventId: string, token: string): boolean
  release(eventId: string, token: string): boolean
  /** How long a done marker is kept: the `retentionMs` option. */
  readonly retentionMs: number
  /** Events currently remembered: done markers and claims in progress. */
  readonly size: number
}

/** Options of {@link memoryStore}. */
export interface MemoryStoreOptions {
  /**
   * How long a done marker is kept. At least the service's retry window, so every retry of a handled
   * event is recognised.
   * @default 259_200_000 + 3_600_000 (73 hours)
   */
  retentionMs?: number
  /**
   * Most done markers remembered at once, so memory stays bounded whatever the traffic (about 200 bytes
   * per entry, the body digest included). At least the `maxEntries / 2` most recent are always remembered; older ones are forgotten
   * in bulk, oldest half first, and the `logger` is told once if that happens before their retention
   * ends. Claims in progress are counted apart and never forgotten while their lease runs.
   * @default 100_000
   */
  maxEntries?: number
  /**
   * Told once (with `warn`, else `error`) when done markers are forgotten before their retention ends:
   * `maxEntries` is then too small for the traffic, and a retry of such an event would run it again. A logger
   * with `info` (console, pino) gets `(fields, message)`, one without the message alone.
   * `createWebhooks` passes its own `logger` to the store it makes by default.
   * @default one line on the console
   */
  logger?: Logger
  /** Clock, for tests. @default Date.now */
  now?: () => number
}

/** The service retries hourly for 72 hours; one hour more covers the last attempt's own delay. */
export const DEFAULT_RETENTION_MS = RETRY_WINDOW_MS + RETRY_INTERVAL_MS

interface Claim {
  token: string
  expiresAt: number
  digest: string | undefined
  position: OrderingPosition | undefined
}

// Tokens never leave the process, so a counter is unique enough and far cheaper than random bytes.
let tokenCounter = 0

/** Stores made by {@link memoryStore}, so `createWebhooks` can warn about one used where it cannot dedupe. */
const memoryStores = new WeakSet<object>()

/** Whether `store` was made by {@link memoryStore}. */
export function isMemoryStore(store: object): boolean {
  return memoryStores.has(store)
}

/**
 * The embedded dedupe store: one process, bounded memory, O(1) per operation (amortized). Use
 * `@payhooks/redis` or `@payhooks/postgres` when several processes receive the same subscription's events.
 *
 * @example
 * const webhooks = createWebhooks({ secret, store: memoryStore({ maxEntries: 50_000 }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const maxEntries = options.maxEntries ?? 100_000
  const now = options.now ?? Date.now
  const log = createLog(options.logger)
  check(retentionMs >= RETRY_WINDOW_MS, 'memoryStore', 'retentionMs', 'cover the 72-hour retry window')
  inRange(maxEntries, 'memoryStore', 'maxEntries', { min: 1 })
  // Claims in progress live apart from done markers and are never evicted: forgetting one would let a
  // retry run the handlers while the first run continues.
  const claims = new Map<string, Claim>()
  const fences = new MemoryFences(retentionMs, maxEntries)
  // Past this many claims, expired ones (handlers that never returned) are swept; it doubles with the live
  // ones, so sweeping stays O(1) amortized.
  let sweepAt = maxEntries
  // Done markers (event id to expiry) in two generations instead of one Map evicted from the front: V8
  // leaves deleted slots at the front of a Map, so FIFO eviction through `keys().next()` slows to O(n)
  // per call once the store is full. When the young generation fills half the budget it becomes the old
  // one and the old one is dropped. Markers expire in the order they are written, so the newest one
  // tells whether a dropped generation still held markers within their retention.
  let young = new Map<string, Marker>()
  let old = new Map<string, Marker>()
  let youngNewest = 0
  let oldNewest = 0
  let warned = false
  const generationSize = Math.max(1, Math.floor(maxEntries / 2))

  // A marker holds its expiry in whole seconds (rounded up) from the store's start: a small integer V8 keeps in
  // the Map itself, where milliseconds since 1970 would be a heap number allocated, kept and traced per marker.
  // With a body digest it is one short string (see memory-marker.ts).
  const start = now()
  const doneMarker = (eventId: string, at: number): Marker | undefined => {
    let map = young
    let found = young.get(eventId)
    if (found === undefined) {
      map = old
      found = old.get(eventId)
      if (found === undefined) return undefined
    }
    if (markerExpiry(found) * 1000 + start > at) return found
    map.delete(eventId)
    return undefined
  }
  const liveClaim = (eventId: string, at: number): Claim | undefined => {
    const claim = claims.get(eventId)
    if (claim !== undefined && claim.expiresAt <= at) {
      claims.delete(eventId)
      return undefined
    }
    return claim
  }
  const held = (eventId: string, token: string, at: number) => {
    const claim = liveClaim(eventId, at)
    return claim !== undefined && claim.token === token ? claim : undefined
  }
  const sweepClaims = (at: number) => {
    for (const [eventId, claim] of claims) if (claim.expiresAt <= at) claims.delete(eventId)
    sweepAt = Math.max(maxEntries, claims.size * 2)
  }
  const remember = (eventId: string, at: number, digest: string | undefined) => {
    if (young.size >= generationSize) {
      if (old.size > 0 && oldNewest > at && !warned) {
        warned = true
        log.warn(
          { code: 'memory_store_full', max_entries: maxEntries },
          `[payhooks] memoryStore: maxEntries (${maxEntries}) reached, so done markers were forgotten before their retention ended; a retry of those events would run their handlers again. Raise maxEntries or use a shared store.`,
        )
      }
      old = young
      oldNewest = youngNewest
      young = new Map()
    }
    youngNewest = at + retentionMs
    young.set(eventId, marker(Math.ceil((youngNewest - start) / 1000), digest))
  }

  const store: MemoryStore = {
    retentionMs,
    ordering: true,
    get size() {
      return claims.size + young.size + old.size
    },
    claim(eventId, leaseMs, digest, position) {
      const at = now()
      const claim = liveClaim(eventId, at)
      if (claim !== undefined) {
        const retryAfterMs = claim.expiresAt - at
        return claim.digest === undefined
          ? { status: 'processing', retryAfterMs }
          : { status: 'processing', retryAfterMs, digest: claim.digest }
      }
      const done = doneMarker(eventId, at)
      if (done !== undefined) {
        const kept = markerDigest(done)
        return kept === undefined ? { status: 'done' } : { status: 'done', digest: kept }
      }
      if (claims.size >= sweepAt) sweepClaims(at)
      const token = `${++tokenCounter}`
      const expiresAt = at + leaseMs
      if (position === undefined) {
        claims.set(eventId, { token, expiresAt, digest, position })
        return { status: 'claimed', token }
      }
      const entry = fences.enter(position.key, token, at, expiresAt)
      if ('busyForMs' in entry) return { status: 'processing', retryAfterMs: entry.busyForMs }
      claims.set(eventId, { token, expiresAt, digest, position })
      return entry.newest === undefined
        ? { status: 'claimed', token }
        : { status: 'claimed', token, newest: entry.newest }
    },
    extend(eventId, token, leaseMs) {
      const at = now()
      const claim = held(eventId, token, at)
      if (claim === undefined) return false
      claim.expiresAt = at + leaseMs
      if (claim.position !== undefined) fences.extend(claim.position.key, token, claim.expiresAt)
      return true
    },
    complete(eventId, token) {
      const at = now()
      const claim = held(eventId, token, at)
      if (claim === undefined) return false
      claims.delete(eventId)
      const position = claim.position
      if (position !== undefined) fences.leave(position.key, token, at, markOf(position, eventId))
      remember(eventId, at, claim.digest)
      return true
    },
    release(eventId, token) {
      const at = now()
      const claim = held(eventId, token, at)
      if (claim === undefined) return false
      claims.delete(eventId)
      if (claim.position !== undefined) fences.leave(claim.position.key, token, at)
      return true
    },
  }
  memoryStores.add(store)
  return store
}
