import type { HealthCheck } from '../health/types.js'
import { createLog, type Logger } from '../logging/log.js'
import { markOf } from '../ordering/marks.js'
import { MemoryFences } from '../ordering/memory-fences.js'
import type { HeldOrderingKey, OrderingPosition } from '../ordering/types.js'
import { RETRY_INTERVAL_MS, RETRY_WINDOW_MS } from '../service-contract.js'
import type { ClaimResult, WebhookStore } from '../store.js'
import { check, inRange } from '../validations.js'
import { type Marker, marker, markerDigest, markerExpiry } from './marker.js'

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
  heldKeys(options: { limit: number }): HeldOrderingKey[]
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

/** The default `maxEntries`. */
export const MEMORY_MAX_ENTRIES = 100_000

/** `ms` for a person: `~45 s`, `~3 min`, `~73 h`. */
export function duration(ms: number): string {
  if (ms < 90_000) return `~${Math.max(1, Math.round(ms / 1000))} s`
  if (ms < 5_400_000) return `~${Math.round(ms / 60_000)} min`
  return `~${Math.round(ms / 3_600_000)} h`
}

/**
 * The time markers are kept once the store is full, from `span`, the time the last half of `maxEntries` took to
 * arrive: just after a generation is dropped they cover `span`, just before the next, twice that.
 */
function window(span: number): string {
  const low = duration(span)
  const high = duration(2 * span)
  return low === high ? low : `${low} to ${high}`
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
  const maxEntries = options.maxEntries ?? MEMORY_MAX_ENTRIES
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
  let youngStart = 0
  // When markers within their retention were last dropped, the window then, and when that was last logged.
  let shortAt: number | undefined
  let windowMs = retentionMs
  let warnedAt: number | undefined
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
      if (old.size > 0 && oldNewest > at) shortWindow(at)
      old = young
      oldNewest = youngNewest
      young = new Map()
    }
    if (young.size === 0) youngStart = at
    youngNewest = at + retentionMs
    young.set(eventId, marker(Math.ceil((youngNewest - start) / 1000), digest))
  }
  // Markers still within their retention are being dropped: the store now remembers events for the time its
  // remaining markers span, not retentionMs. Said at once, then hourly while it lasts.
  const shortWindow = (at: number) => {
    windowMs = at - youngStart
    shortAt = at
    if (warnedAt !== undefined && at - warnedAt < RETRY_INTERVAL_MS) return
    warnedAt = at
    log.warn(
      { code: 'memory_store_full', max_entries: maxEntries, window_ms: windowMs },
      `[payhooks] memoryStore: maxEntries (${maxEntries}) reached, so done markers last ${window(windowMs)}, not ${duration(retentionMs)}: a retry of an event handled longer ago than that runs its handlers again (the service retries for 72 h). Raise maxEntries to your peak events per second × ${Math.round((2 * retentionMs) / 1000)} (twice the retention in seconds; see "One process on memoryStore" in docs/guide/production.md), or use a shared store (redisStore, postgresStore).`,
    )
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
      const entry = fences.enter(position.key, token, at, expiresAt, eventId, position.eventType)
      if ('busyForMs' in entry) {
        return { status: 'processing', retryAfterMs: entry.busyForMs, keyHeldSince: entry.heldSince }
      }
      claims.set(eventId, { token, expiresAt, digest, position })
      const { newest, fencingToken } = entry
      return newest === undefined
        ? { status: 'claimed', token, fencingToken }
        : { status: 'claimed', token, newest, fencingToken }
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
    async health() {
      const at = now()
      const checks: HealthCheck[] = [
        { name: 'store', ok: true, detail: 'memoryStore: this process only', latencyMs: 0 },
      ]
      const short = shortAt !== undefined && at - shortAt < RETRY_INTERVAL_MS
      checks.push(
        short
          ? {
              name: 'memory_store_window',
              ok: false,
              severity: 'warning',
              detail: `maxEntries (${maxEntries}) reached: done markers last ${window(windowMs)}, not ${duration(retentionMs)}`,
              fix: 'raise maxEntries to your peak events per second × twice the retention in seconds, or use a shared store',
            }
          : {
              name: 'memory_store_window',
              ok: true,
              severity: 'warning',
              detail: `done markers last ${duration(retentionMs)}`,
            },
      )
      return checks
    },
    heldKeys: ({ limit }) => fences.held(now(), limit),
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
