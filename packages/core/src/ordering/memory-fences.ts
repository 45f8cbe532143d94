import { compareMarks } from './marks.js'
import type { HeldOrderingKey, OrderingMark } from './types.js'

interface Fence {
  /** The newest event handled for the key. */
  mark: OrderingMark | undefined
  /** When the mark may be forgotten: the store's retention after it moved. */
  keepUntil: number
  /** The claim (token) handling an event of the key now, and until when its lease runs. */
  holder: string | undefined
  heldUntil: number
  /** When the holder took the key. */
  heldSince: number
  /** The holder's event and fencing token. */
  eventId: string
  eventType: string
  fencingToken: number
}

/** What {@link MemoryFences.enter} answers: the key's mark, or how long another claim still holds the key. */
export type FenceEntry =
  | { newest: OrderingMark | undefined; fencingToken: number }
  | { busyForMs: number; heldSince: number }

/**
 * The memory store's ordering fences: per ordering key, the newest event handled (kept for the store's retention)
 * and the one claim handling an event of the key now, so two events of one key never run at once and the mark
 * read at the claim is still the newest when the handlers finish.
 */
export class MemoryFences {
  readonly #fences = new Map<string, Fence>()
  /** The keys with a holder (whose lease may have run out), so listing them never walks the marks. */
  readonly #held = new Set<string>()
  #sweepAt: number
  /**
   * The last fencing token given, for any key: one counter for the store (one process) grows for every key, so a
   * fence dropped and made again never gives a token back. Starts from the clock in microseconds, as Redis and
   * PostgreSQL do, so tokens stay greater across a restart too.
   */
  #lastToken = 0

  constructor(
    readonly retentionMs: number,
    readonly maxEntries: number,
  ) {
    this.#sweepAt = maxEntries
  }

  get size(): number {
    return this.#fences.size
  }

  /** Takes the key for `token` (a claim of `eventId`) until `heldUntil`, unless another live claim holds it. */
  enter(key: string, token: string, at: number, heldUntil: number, eventId = '', eventType = ''): FenceEntry {
    let fence = this.#fences.get(key)
    if (fence === undefined) {
      if (this.#fences.size >= this.#sweepAt) this.#sweep(at)
      fence = {
        mark: undefined,
        keepUntil: 0,
        holder: undefined,
        heldUntil: 0,
        heldSince: 0,
        eventId,
        eventType,
        fencingToken: 0,
      }
      this.#fences.set(key, fence)
    } else if (fence.holder !== undefined && fence.heldUntil > at) {
      return { busyForMs: fence.heldUntil - at, heldSince: fence.heldSince }
    }
    if (fence.mark !== undefined && fence.keepUntil <= at) fence.mark = undefined
    fence.holder = token
    fence.heldUntil = heldUntil
    fence.heldSince = at
    fence.eventId = eventId
    fence.eventType = eventType
    this.#lastToken = Math.max(this.#lastToken + 1, at * 1000)
    fence.fencingToken = this.#lastToken
    this.#held.add(key)
    return { newest: fence.mark, fencingToken: this.#lastToken }
  }

  extend(key: string, token: string, heldUntil: number): void {
    const fence = this.#fences.get(key)
    if (fence?.holder === token) fence.heldUntil = heldUntil
  }

  /** Frees the key if `token` holds it; with `applied`, first moves the mark to it when it is newer. */
  leave(key: string, token: string, at: number, applied?: OrderingMark): void {
    const fence = this.#fences.get(key)
    if (fence === undefined || fence.holder !== token) return
    fence.holder = undefined
    this.#held.delete(key)
    if (applied !== undefined && (fence.mark === undefined || compareMarks(applied, fence.mark) > 0)) {
      fence.mark = applied
      fence.keepUntil = at + this.retentionMs
    }
    if (fence.mark === undefined) this.#fences.delete(key)
  }

  /** The keys held at `at`, longest held first, at most `limit`; forgets holders whose lease ran out. */
  held(at: number, limit: number): HeldOrderingKey[] {
    const live: [string, Fence][] = []
    for (const key of this.#held) {
      const fence = this.#fences.get(key)
      if (fence === undefined || fence.holder === undefined || fence.heldUntil <= at) this.#held.delete(key)
      else live.push([key, fence])
    }
    live.sort(([a, x], [b, y]) => x.heldSince - y.heldSince || (a < b ? -1 : a > b ? 1 : 0))
    return live.slice(0, limit).map(([key, fence]) => ({
      key,
      eventId: fence.eventId,
      eventType: fence.eventType,
      since: new Date(fence.heldSince),
      expiresAt: new Date(fence.heldUntil),
      token: fence.fencingToken,
    }))
  }

  /** Drops fences with neither a live holder nor a mark within its retention; amortized O(1) per new key. */
  #sweep(at: number): void {
    for (const [key, fence] of this.#fences) {
      const held = fence.holder !== undefined && fence.heldUntil > at
      if (!held && fence.keepUntil <= at) {
        this.#fences.delete(key)
        this.#held.delete(key)
      }
    }
    this.#sweepAt = Math.max(this.maxEntries, this.#fences.size * 2)
  }
}
