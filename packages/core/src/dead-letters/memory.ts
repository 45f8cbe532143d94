import { positiveInteger } from '../validations.js'
import { deadLetterCountQuery, deadLetterMatches, deadLetterPage, deadLetterQuery, hasTimeWindow } from './query.js'
import type { DeadLetter, DeadLetterCountQuery, DeadLetterQuery, DeadLetterStore, ParkedEvent } from './types.js'

/** Options of {@link memoryDeadLetterStore}. */
export interface MemoryDeadLetterStoreOptions {
  /**
   * Most letters held. When full, the oldest replayed letter makes room; with none replayed, `park` throws
   * (the delivery stays answered non-2XX, as it is anyway with this store).
   * @default 10_000
   */
  maxEntries?: number
}

/** The store {@link memoryDeadLetterStore} returns: synchronous, and it tells its size. */
export interface MemoryDeadLetterStore extends DeadLetterStore {
  readonly durable: false
  park(event: ParkedEvent): DeadLetter
  get(eventId: string): DeadLetter | undefined
  list(query?: DeadLetterQuery): DeadLetter[]
  markReplayed(eventId: string, at: Date): boolean
  count(query?: DeadLetterCountQuery): number
  /** Letters held, parked or replayed. */
  readonly size: number
}

const copy = (letter: DeadLetter): DeadLetter => ({
  ...letter,
  body: new Uint8Array(letter.body),
  headers: { ...letter.headers },
})

/** Whether two bodies are the same bytes. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Dead letters in this process's memory, for development and tests: lost on a restart, so it is not `durable`
 * and a parked event is still answered non-2XX (the service keeps retrying, and nothing is lost). Use
 * `redisDeadLetterStore` from `@payhooks/redis` in production.
 *
 * @example
 * const webhooks = createWebhooks({ secret, deadLetters: memoryDeadLetterStore() })
 * webhooks.onError((error) => console.error(error.message))
 * // later: await webhooks.deadLetters.list()
 */
export function memoryDeadLetterStore(options: MemoryDeadLetterStoreOptions = {}): MemoryDeadLetterStore {
  const maxEntries = positiveInteger(options.maxEntries ?? 10_000, 'memoryDeadLetterStore', 'maxEntries')
  const letters = new Map<string, DeadLetter>()
  // Letters by status, code and event type, kept with every change: a count without a time window reads these; one
  // with a window (parked or created) reads every letter, as a list does: this store holds 10,000 at most.
  const counts = new Map<string, { status: string; code: string; eventType: string; n: number }>()
  const tally = (letter: DeadLetter, by: number) => {
    const key = JSON.stringify([letter.status, letter.code, letter.eventType])
    const entry = counts.get(key) ?? { status: letter.status, code: letter.code, eventType: letter.eventType, n: 0 }
    entry.n += by
    if (entry.n === 0) counts.delete(key)
    else counts.set(key, entry)
  }
  const forget = (eventId: string) => {
    const letter = letters.get(eventId)
    if (!letter) return false
    tally(letter, -1)
    return letters.delete(eventId)
  }

  const makeRoom = () => {
    let oldest: DeadLetter | undefined
    for (const letter of letters.values()) {
      if (letter.status === 'replayed' && (!oldest || letter.parkedAt < oldest.parkedAt)) oldest = letter
    }
    if (!oldest) throw new Error(`memoryDeadLetterStore: full (${maxEntries} parked letters)`)
    forget(oldest.eventId)
  }

  return {
    durable: false,
    keysetPaging: true,
    get size() {
      return letters.size
    },
    park(event) {
      const existing = letters.get(event.eventId)
      if (existing && (existing.status === 'replayed' || !sameBytes(existing.body, event.body))) return copy(existing)
      if (!existing && letters.size >= maxEntries) makeRoom()
      const letter: DeadLetter = {
        eventId: event.eventId,
        eventType: event.eventType,
        body: new Uint8Array(event.body),
        headers: { ...event.headers },
        code: event.code,
        reason: event.reason,
        createdAt: event.createdAt,
        parkedAt: event.parkedAt,
        firstParkedAt: existing?.firstParkedAt ?? event.parkedAt,
        parkCount: (existing?.parkCount ?? 0) + 1,
        status: 'parked',
        replayedAt: undefined,
      }
      if (existing) tally(existing, -1)
      tally(letter, 1)
      letters.set(event.eventId, letter)
      return copy(letter)
    },
    get(eventId) {
      const letter = letters.get(eventId)
      return letter && copy(letter)
    },
    list(query) {
      return deadLetterPage(letters.values(), deadLetterQuery(query, 'memoryDeadLetterStore.list')).map(copy)
    },
    markReplayed(eventId, at) {
      const letter = letters.get(eventId)
      if (!letter) return false
      tally(letter, -1)
      letter.status = 'replayed'
      letter.replayedAt = at
      tally(letter, 1)
      return true
    },
    delete: forget,
    count(query) {
      const checked = deadLetterCountQuery(query, 'memoryDeadLetterStore.count')
      let found = 0
      if (hasTimeWindow(checked)) {
        for (const letter of letters.values()) if (deadLetterMatches(letter, checked)) found++
        return found
      }
      for (const entry of counts.values()) {
        if (deadLetterMatches({ ...entry, parkedAt: new Date(0) } as unknown as DeadLetter, checked)) found += entry.n
      }
      return found
    },
  }
}
