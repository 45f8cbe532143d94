import type { DeadLetterStore } from '@payhooks/core'
import { afterEach, describe } from 'vitest'
import { receiver, receiverTests, SECRET } from './dead-letter-contract/receiver.js'
import { storeTests } from './dead-letter-contract/store.js'
import type { DeadLetterStoreFactory, Fleet } from './dead-letter-contract/types.js'
import { deadLetterViewContract } from './dead-letter-contract/view.js'
import { windowTests } from './dead-letter-contract/windows.js'
import { fleetNamespace, makeFleet } from './fleet.js'
import { signedDelivery } from './signing.js'

export type {
  ContractEvent,
  DeadLetterStoreFactory,
  DeadLetterSubject,
  DeadLetterSubjectFactory,
} from './dead-letter-contract/types.js'
export { deadLetterViewContract } from './dead-letter-contract/view.js'

// The suites live in dead-letter-contract/: the store's own tests (store.ts), those through a receiver
// (receiver.ts) and the view every DeadLetters gives tools (view.ts).

/**
 * The behaviour payhooks relies on from a {@link DeadLetterStore}, as a vitest suite: the exact bytes kept,
 * parking again in place, `markReplayed`, newest-first listing with filters and pages, counts and pages within
 * windows of the parked time and of the events' `created_at` (with keyset pages), letters shared by the
 * instances of a namespace; then through a receiver: a schema mismatch parked (answered 200 only when the store
 * is `durable`), replayed once the schema is fixed (once: a second replay is a duplicate), a stored body altered
 * after parking refused, and a handler failure on an event signed over 71 hours ago parked. It also runs
 * {@link deadLetterViewContract} on the receiver's `webhooks.deadLetters` over the store.
 *
 * Each test works in a fresh namespace, calls `init` (when present) once on every instance before using it, and
 * `shutdown` (when present) after the test.
 *
 * @example
 * // test/dead-letters.test.ts
 * import { memoryDeadLetterStore, type DeadLetterStore } from '@payhooks/core'
 * import { redisDeadLetterStore } from '@payhooks/redis'
 * import { deadLetterContract } from '@payhooks/testing/dead-letter-contract'
 * import { Redis } from 'ioredis'
 *
 * const fleets = new Map<string, DeadLetterStore>()
 * deadLetterContract('memoryDeadLetterStore', (namespace) => {
 *   const store = fleets.get(namespace) ?? memoryDeadLetterStore()
 *   fleets.set(namespace, store)
 *   return store
 * })
 * deadLetterContract('redisDeadLetterStore', (namespace) =>
 *   redisDeadLetterStore(new Redis(process.env.REDIS_URL!), { keyPrefix: `{test:${namespace}}:` }),
 * )
 */
export function deadLetterContract(name: string, makeStore: DeadLetterStoreFactory): void {
  const made = new Set<DeadLetterStore>()
  afterEach(async () => {
    const stores = [...made]
    made.clear()
    for (const store of stores) await store.shutdown?.()
  })

  /** Instances of one fleet, in a namespace of this test's own; instance(i) is made on first use. */
  function fleet(namespace = fleetNamespace(name)): Fleet {
    return makeFleet(namespace, makeStore, made)
  }

  describe(`dead letter store contract: ${name}`, () => {
    storeTests(fleet)
    windowTests(fleet)
    receiverTests(fleet)
  })

  deadLetterViewContract(`${name} through webhooks.deadLetters`, async (namespace) => {
    const store = await fleet(namespace)()
    const { webhooks, runs } = receiver(store)
    return {
      deadLetters: webhooks.deadLetters,
      runs,
      async park(event, reason) {
        const { body, headers } = await signedDelivery(event, SECRET)
        await store.park({
          eventId: event.event_id,
          eventType: event.event_type,
          body: new TextEncoder().encode(body),
          headers,
          code: 'handler_failed',
          reason,
          createdAt: typeof event.created_at === 'string' ? new Date(event.created_at) : undefined,
          parkedAt: new Date(),
        })
      },
    }
  })
}
