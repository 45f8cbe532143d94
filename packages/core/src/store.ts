import { check, inRange } from './validations.js'

/** Outcome of {@link WebhookStore.claim}. */
export type ClaimResult =
  /** This delivery owns the event until `complete`, `release` or the lease runs out. */
  | { status: 'claimed'; token: string }
  /** The event was handled already: answer 2XX without running handlers. */
  | { status: 'done' }
  /** Another delivery holds a live claim; `retryAfterMs` is how long its lease still runs, when known. */
  | { status: 'processing'; retryAfterMs?: number }

type MaybePromise<T> = T | Promise<T>

/**
 * Where payhooks records which events it has handled, so each `event_id` runs its handlers once.
 *
 * A claim is a lease with an owner token: only the holder may `complete` or `release` it, and if the
 * holder dies the lease expires so the service's next retry is processed. Implementations must make
 * `claim` atomic across everything that shares the store. Any method may throw or reject when the
 * backing service is unavailable; payhooks then answers 503 and acknowledges nothing.
 */
export interface WebhookStore {
  /** Optional set-up, called once before the first claim. */
  init?(): MaybePromise<void>
  /**
   * Atomically claims `eventId` for `leaseMs` milliseconds, unless it is done or claimed by a live
   * holder.
   */
  claim(eventId: string, leaseMs: number): MaybePromise<ClaimResult>
  /**
   * Marks the event done (kept for the store's retention, at least the service's 72-hour retry
   * window) if `token` still holds its claim. Returns false when the claim was lost.
   */
  complete(eventId: string, token: string): MaybePromise<boolean>
  /** Drops the claim, if `token` still holds it, so a later delivery runs the handlers again. */
  release(eventId: string, token: string): MaybePromise<boolean>
  /** Optional clean-up: close timers or connections the store owns. */
  shutdown?(): MaybePromise<void>
}

/** The store {@link memoryStore} returns: synchronous, and it tells its size. */
export interface MemoryStore extends WebhookStore {
  claim(eventId: string, leaseMs: number): ClaimResult
  complete(eventId: string, token: string): boolean
  release(eventId: string, token: string): boolean
  /** Events currently remembered, done or in progress. */
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
   * Most events remembered at once, so memory stays bounded whatever the traffic (about 200 bytes per
   * entry). At least the `maxEntries / 2` most recent events are always remembered; older ones are
   * forgotten in bulk, oldest half first.
   * @default 100_000
   */
  maxEntries?: number
  /** Clock, for tests. @default Date.now */
  now?: () => number
}

/** The service retries hourly for 72 hours; one hour more covers the last attempt's own delay. */
export const DEFAULT_RETENTION_MS = 73 * 60 * 60 * 1000
const RETRY_WINDOW_MS = 72 * 60 * 60 * 1000

interface Entry {
  /** Owner token while processing; undefined once done. */
  token: string | undefined
  expiresAt: number
}

// Tokens never leave the process, so a counter is unique enough and far cheaper than random bytes.
let tokenCounter = 0

/**
 * The embedded dedupe store: one process, bounded memory, O(1) per operation. Use `@payhooks/redis`
 * when several processes receive the same subscription's events.
 *
 * @example
 * const webhooks = createWebhooks({ secret, store: memoryStore({ maxEntries: 50_000 }) })
 */
export function memoryStore(options: MemoryStoreOptions = {}): MemoryStore {
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  const maxEntries = options.maxEntries ?? 100_000
  const now = options.now ?? Date.now
  check(retentionMs >= RETRY_WINDOW_MS, 'memoryStore', 'retentionMs', 'cover the 72-hour retry window')
  inRange(maxEntries, 'memoryStore', 'maxEntries', { min: 1 })
  // Two generations instead of one Map evicted from the front: V8 leaves deleted slots at the front of
  // a Map, so FIFO eviction through `keys().next()` slows to O(n) per call once the store is full.
  // When the young generation fills half the budget it becomes the old one and the old one is dropped.
  let young = new Map<string, Entry>()
  let old = new Map<string, Entry>()
  const generationSize = Math.max(1, Math.floor(maxEntries / 2))

  const live = (eventId: string, at: number): Entry | undefined => {
    let map = young
    let entry = young.get(eventId)
    if (entry === undefined) {
      map = old
      entry = old.get(eventId)
    }
    if (entry !== undefined && entry.expiresAt <= at) {
      map.delete(eventId)
      return undefined
    }
    return entry
  }
  const held = (eventId: string, token: string, at: number) => {
    const entry = live(eventId, at)
    return entry !== undefined && entry.token === token ? entry : undefined
  }

  return {
    get size() {
      return young.size + old.size
    },
    claim(eventId, leaseMs) {
      const at = now()
      const entry = live(eventId, at)
      if (entry) {
        return entry.token === undefined
          ? { status: 'done' }
          : { status: 'processing', retryAfterMs: entry.expiresAt - at }
      }
      if (young.size >= generationSize) {
        old = young
        young = new Map()
      }
      const token = `${++tokenCounter}`
      young.set(eventId, { token, expiresAt: at + leaseMs })
      return { status: 'claimed', token }
    },
    complete(eventId, token) {
      const at = now()
      const entry = held(eventId, token, at)
      if (entry === undefined) return false
      entry.token = undefined
      entry.expiresAt = at + retentionMs
      return true
    },
    release(eventId, token) {
      if (!held(eventId, token, now())) return false
      if (!young.delete(eventId)) old.delete(eventId)
      return true
    },
  }
}
