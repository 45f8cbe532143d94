import { positiveInteger } from '../validations.js'
import { deadLetterCountQuery, deadLetterMatches, deadLetterQuery } from './query.js'
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

  const makeRoom = () => {
    let oldest: DeadLetter | undefined
    for (const letter of letters.values()) {
      if (letter.status === 'replayed' && (!oldest || letter.parkedAt < oldest.parkedAt)) oldest = letter
    }
    if (!oldest) throw new Error(`memoryDeadLetterStore: full (${maxEntries} parked letters)`)
    letters.delete(oldest.eventId)
  }

  return {
    durable: false,
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
      letters.set(event.eventId, letter)
      return copy(letter)
    },
    get(eventId) {
      const letter = letters.get(eventId)
      return letter && copy(letter)
    },
    list(query) {
      const checked = deadLetterQuery(query, 'memoryDeadLetterStore.list')
      const found = [...letters.values()].filter((letter) => deadLetterMatches(letter, checked))
      found.sort((a, b) => b.parkedAt.getTime() - a.parkedAt.getTime() || (a.eventId < b.eventId ? 1 : -1))
      return found.slice(checked.offset, checked.offset + checked.limit).map(copy)
    },
    markReplayed(eventId, at) {
      const letter = letters.get(eventId)
      if (!letter) return false
      letter.status = 'replayed'
      letter.replayedAt = at
      return true
    },
    delete(eventId) {
      return letters.delete(eventId)
    },
    count(query) {
      const checked = deadLetterCountQuery(query, 'memoryDeadLetterStore.count')
      let found = 0
      for (const letter of letters.values()) if (deadLetterMatches(letter, checked)) found++
      return found
    },
  }
}
