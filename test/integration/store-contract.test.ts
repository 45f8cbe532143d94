// The store contract of @payhooks/testing against the memory store, and a store written before body digests. The
// stores on their real backings: store-contract-redis, store-contract-postgres (one file each, so they run side by
// side: most of their time is spent waiting for leases to run out).
import { type MemoryStore, memoryStore, type WebhookStore } from '@payhooks/core'
import { storeContract } from '@payhooks/testing/store-contract'

// One process: the instances of a fleet are one instance.
const memoryFleets = new Map<string, WebhookStore>()
storeContract(
  'memoryStore',
  (namespace) => {
    const store = memoryFleets.get(namespace) ?? memoryStore()
    memoryFleets.set(namespace, store)
    return store
  },
  { heldKeys: true },
)

// A store written before body digests: it drops claim's third argument and answers none, and still meets the
// contract, the receiver answering copies with other bytes as plain duplicates.
const legacyFleets = new Map<string, MemoryStore>()
storeContract(
  'a store without digests',
  (namespace) => {
    const inner = legacyFleets.get(namespace) ?? memoryStore()
    legacyFleets.set(namespace, inner)
    return {
      retentionMs: inner.retentionMs,
      claim: (eventId, leaseMs) => inner.claim(eventId, leaseMs),
      extend: (eventId, token, leaseMs) => inner.extend(eventId, token, leaseMs),
      complete: (eventId, token) => inner.complete(eventId, token),
      release: (eventId, token) => inner.release(eventId, token),
    }
  },
  { digests: false, ordering: false },
)
