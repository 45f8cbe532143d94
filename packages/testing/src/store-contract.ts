import type { WebhookStore } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { claimTests } from './store-contract/claims.js'
import { contractContext } from './store-contract/context.js'
import { digestTests } from './store-contract/digests.js'
import { heldKeyTests } from './store-contract/held-keys.js'
import { instanceTests } from './store-contract/instances.js'
import { leaseTests } from './store-contract/leases.js'
import { orderingTests } from './store-contract/ordering.js'
import type { StoreContractOptions, StoreFactory } from './store-contract/types.js'

export type { StoreContractOptions, StoreFactory } from './store-contract/types.js'

// The suites live in store-contract/: claims (claims.ts), leases (leases.ts), a fleet's instances (instances.ts),
// body digests (digests.ts) and ordering fences (ordering.ts), on the fleets and helpers of context.ts.

/**
 * The behaviour payhooks relies on from a {@link WebhookStore}, as a vitest suite: claim atomicity,
 * owner tokens, lease expiry, lease renewal (`extend`, required here), the retention it says (`retentionMs`,
 * required here: the receiver's `maxEventAgeMs` defaults to it), done markers, release,
 * `processing` with `retryAfterMs`, `init`, `maxConcurrentEvents` when advertised, ordering fences (see {@link StoreContractOptions.ordering}), and body digests (see
 * {@link StoreContractOptions.digests}).
 * Run it from a test file against each store, with the store's real backing service. Tests of
 * methods a later `WebhookStore` gains join this suite, so every store keeps meeting them.
 *
 * Each test works in a fresh namespace, calls `init` (when present) once on every instance before
 * using it, as the receiver does, and `shutdown` (when present) after the test.
 *
 * @example
 * // test/store.test.ts
 * import { memoryStore, type WebhookStore } from '@payhooks/core'
 * import { redisStore } from '@payhooks/redis'
 * import { storeContract } from '@payhooks/testing/store-contract'
 * import { Redis } from 'ioredis'
 *
 * const fleets = new Map<string, WebhookStore>()
 * storeContract('memoryStore', (namespace) => {
 *   const store = fleets.get(namespace) ?? memoryStore()
 *   fleets.set(namespace, store)
 *   return store
 * })
 * storeContract('redisStore', (namespace) =>
 *   redisStore(new Redis(process.env.REDIS_URL!), { keyPrefix: `test:${namespace}:` }),
 * )
 */
export function storeContract(name: string, makeStore: StoreFactory, options: StoreContractOptions = {}): void {
  const made = new Set<WebhookStore>()
  afterEach(async () => {
    const stores = [...made]
    made.clear()
    for (const store of stores) await store.shutdown?.()
  })
  const context = contractContext(name, makeStore, options, made)
  const { fleet } = context

  describe(`store contract: ${name}`, () => {
    claimTests(context)
    leaseTests(context)
    instanceTests(context)
    digestTests(context)
    // Ordering fences (issue 24): for stores that say they keep them (`store.ordering`).
    if (options.ordering ?? true) {
      orderingTests(context)
      heldKeyTests(context)
    } else {
      it('ordering: says it keeps no fences, so a receiver refuses ordering rules on it', async () => {
        expect((await fleet()()).ordering).not.toBe(true)
      })
    }
  })
}
