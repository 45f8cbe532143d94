// Shared by the storage benches (redis-storage, postgres-storage): the same events through any WebhookStore, so the
// bytes each backing keeps per event are measured on one workload.
export const hex = (n, width) => n.toString(16).padStart(width, '0')
/** The n-th event's id: 40 characters, as the service's. */
export const eventId = (n) => `evt_${hex(n, 8)}-7c1e-4c2a-9a8e-${hex(n * 7, 12)}`

/**
 * Claims `events` events on 16 connections at once and completes them (or, with `fail`, releases them). Ordered:
 * `perKey` events share an ordering key, one after the other, as their ordering requires. `digest(n)` is the
 * n-th event's body digest.
 */
export async function handleEvents(store, { events, ordered, fail, perKey, digest }) {
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < events) {
        const first = next
        next += perKey
        for (let n = first; n < first + perKey; n++) {
          const position = ordered
            ? { key: `txn_${hex(first, 32)}`, at: 1_764_230_400_000 + n, eventType: 'transaction_settled' }
            : undefined
          const claim = await store.claim(eventId(n), 60_000, digest(n), position)
          if (claim.status !== 'claimed') throw new Error(`${eventId(n)} was ${claim.status}`)
          await (fail ? store.release(eventId(n), claim.token) : store.complete(eventId(n), claim.token))
        }
      }
    }),
  )
}
