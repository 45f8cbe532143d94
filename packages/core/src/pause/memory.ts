import type { Pause, PauseStore } from './types.js'

/** The store {@link memoryPauseStore} returns: synchronous. */
export interface MemoryPauseStore extends PauseStore {
  pause(pause: Pause): void
  resume(eventType: string): boolean
  list(): Pause[]
  watch(listener: () => void): () => void
}

/**
 * Pauses kept in this process only: every receiver given this store sees a pause at once, and a restart forgets
 * it. The default of `createWebhooks({ pauses })`, one per receiver. For a fleet, `redisPauseStore` or
 * `postgresPauseStore`.
 *
 * @example
 * const pauses = memoryPauseStore()
 * const a = createWebhooks({ secret, pauses })
 * const b = createWebhooks({ secret, pauses })
 * await a.pause('transaction_settled', { reason: 'ledger migration' }) // b stops too
 */
export function memoryPauseStore(): MemoryPauseStore {
  const pauses = new Map<string, Pause>()
  const listeners = new Set<() => void>()
  const changed = () => {
    for (const listener of listeners) listener()
  }
  return {
    pause(pause) {
      pauses.set(pause.eventType, { ...pause, since: new Date(pause.since) })
      changed()
    },
    resume(eventType) {
      const had = pauses.delete(eventType)
      if (had) changed()
      return had
    },
    list: () => [...pauses.values()].map((pause) => ({ ...pause, since: new Date(pause.since) })),
    watch(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
  }
}
