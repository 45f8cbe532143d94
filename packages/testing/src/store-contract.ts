import { randomUUID } from 'node:crypto'
import type { WebhookStore } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { digestTests } from './store-contract/digests.js'
import { orderingTests } from './store-contract/ordering.js'

type MaybePromise<T> = T | Promise<T>

/**
 * Makes the store under test. Every test of the contract calls it with a fresh `namespace` (its own
 * empty slice of the store: a key prefix, a table, …). Calls with the same namespace must return
 * stores that share their data, like the instances of one receiver fleet: a store that lives in one
 * process returns the same instance again.
 */
export type StoreFactory = (namespace: string) => MaybePromise<WebhookStore>

/** Options of {@link storeContract}. */
export interface StoreContractOptions {
  /**
   * Lease of the claims the contract lets run out, in milliseconds. The store must honour a lease
   * this short; the lease tests wait a little longer than it.
   * @default 300
   */
  shortLeaseMs?: number
  /**
   * Concurrent claims of one event in the atomicity test, each through its own store instance.
   * @default 8
   */
  claimants?: number
  /**
   * Events raced in the atomicity test.
   * @default 25
   */
  races?: number
  /**
   * Whether every `processing` answer carries `retryAfterMs` (how long the holder's lease still
   * runs). Set false for a store that cannot tell; a value it does give is still checked.
   * @default true
   */
  retryAfter?: boolean
  /**
   * Whether the store keeps the body digest a claim is made with (`claim`'s third argument) and answers it with
   * `done` and `processing`, so the receiver reports copies of an event with other bytes. Set false for a store
   * without it: the contract then checks that a claim with a digest works as one without, and that a receiver
   * on it answers every copy as a plain duplicate.
   * @default true
   */
  digests?: boolean
  /**
   * Whether to run the ordering-fence tests (`claim`'s fourth argument, `complete` moving the key's mark, one event
   * of a key at a time). Set false for a store that keeps no fences (`store.ordering` unset): a receiver refuses
   * ordering rules on it.
   * @default true
   */
  ordering?: boolean
}

/** Lease of the claims that must not run out during a test. */
const LEASE_MS = 60_000
/** The service's retry period (72 hours): a store must remember a handled event at least this long. */
const RETRY_WINDOW_MS = 72 * 3_600_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

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
  const shortLeaseMs = options.shortLeaseMs ?? 300
  const claimants = options.claimants ?? 8
  const races = options.races ?? 25
  const retryAfter = options.retryAfter ?? true
  const digests = options.digests ?? true

  const made = new Set<WebhookStore>()
  afterEach(async () => {
    const stores = [...made]
    made.clear()
    for (const store of stores) await store.shutdown?.()
  })

  /** Instances of one fleet, in a namespace of this test's own; instance(i) is made on first use. */
  function fleet() {
    const namespace = `${name.replace(/[^\w-]/g, '_')}-${randomUUID()}`
    const instances = new Map<number, Promise<WebhookStore>>()
    return (index = 0): Promise<WebhookStore> => {
      let instance = instances.get(index)
      if (!instance) {
        instance = (async () => {
          const store = await makeStore(namespace)
          made.add(store)
          await store.init?.()
          return store
        })()
        instances.set(index, instance)
      }
      return instance
    }
  }

  async function claimed(store: WebhookStore, eventId: string, leaseMs = LEASE_MS, digest?: string): Promise<string> {
    const result = await (digest === undefined ? store.claim(eventId, leaseMs) : store.claim(eventId, leaseMs, digest))
    if (result.status !== 'claimed') throw new Error(`expected ${eventId} to be claimed, got ${result.status}`)
    expect(typeof result.token).toBe('string')
    return result.token
  }

  /** The store's `extend`, which the contract requires (the receiver renews claims with it). */
  function extend(store: WebhookStore, eventId: string, token: string, leaseMs: number) {
    if (!store.extend)
      throw new Error(`${name} has no extend(eventId, token, leaseMs): the receiver renews claims with it`)
    return store.extend(eventId, token, leaseMs)
  }

  /** Claims `eventId` as soon as the lease holding it runs out. */
  async function claimAfterExpiry(store: WebhookStore, eventId: string, digest?: string): Promise<string> {
    const giveUp = Date.now() + shortLeaseMs + 10_000
    for (;;) {
      const result = await store.claim(eventId, LEASE_MS, digest)
      if (result.status === 'claimed') return result.token
      if (result.status === 'done') throw new Error(`expected the lease of ${eventId} to run out, got done`)
      if (Date.now() > giveUp) throw new Error(`the ${shortLeaseMs} ms lease of ${eventId} never ran out`)
      await sleep(Math.max(5, Math.min(result.retryAfterMs ?? 25, 100)))
    }
  }

  describe(`store contract: ${name}`, () => {
    it('claims atomically: of many concurrent claims of an event exactly one is claimed, the others processing', async () => {
      const instance = fleet()
      const stores = await Promise.all(Array.from({ length: claimants }, (_, i) => instance(i)))
      // One claim each first, so the race is between instances that are up (connected, initialised).
      await Promise.all(stores.map((store, i) => store.claim(`evt_warm_up_${i}`, LEASE_MS)))
      for (let race = 0; race < races; race++) {
        const results = await Promise.all(stores.map((store) => store.claim(`evt_race_${race}`, LEASE_MS)))
        expect(results.filter((result) => result.status === 'claimed')).toHaveLength(1)
        expect(results.filter((result) => result.status === 'processing')).toHaveLength(claimants - 1)
      }
    })

    it('says its retention: retentionMs, whole milliseconds covering the 72-hour retry window', async () => {
      const store = await fleet()()
      const { retentionMs } = store
      if (retentionMs === undefined) {
        throw new Error(
          `${name} has no retentionMs: the receiver's maxEventAgeMs defaults to it, so a resend the store may have forgotten is never run`,
        )
      }
      expect(Number.isSafeInteger(retentionMs)).toBe(true)
      expect(retentionMs).toBeGreaterThanOrEqual(RETRY_WINDOW_MS)
    })

    it('lets only the owner token complete or release a claim: a wrong token fails and changes nothing', async () => {
      const instance = fleet()
      const [owner, other] = [await instance(0), await instance(1)]
      const token = await claimed(owner, 'evt_owned')
      const otherToken = await claimed(owner, 'evt_other')
      expect(otherToken).not.toBe(token)

      for (const wrong of [`${token}x`, '', otherToken]) {
        expect(await other.complete('evt_owned', wrong)).toBe(false)
        expect(await other.release('evt_owned', wrong)).toBe(false)
      }
      expect((await other.claim('evt_owned', LEASE_MS)).status).toBe('processing')
      // A token is not a key: it completes nothing for an event it did not claim.
      expect(await owner.complete('evt_never_claimed', token)).toBe(false)
      expect(await owner.release('evt_never_claimed', token)).toBe(false)
      expect((await other.claim('evt_never_claimed', LEASE_MS)).status).toBe('claimed')

      // The token is the owner, whichever instance presents it.
      expect(await other.complete('evt_owned', token)).toBe(true)
      expect(await owner.claim('evt_owned', LEASE_MS)).toEqual({ status: 'done' })
      expect((await other.claim('evt_other', LEASE_MS)).status).toBe('processing')
    })

    it('answers processing with retryAfterMs, how long the holder’s lease still runs', async () => {
      const instance = fleet()
      const [holder, other] = [await instance(0), await instance(1)]
      await claimed(holder, 'evt_held')
      for (const store of [other, holder]) {
        const result = await store.claim('evt_held', LEASE_MS)
        expect(result.status).toBe('processing')
        const retryAfterMs = result.status === 'processing' ? result.retryAfterMs : undefined
        if (retryAfter || retryAfterMs !== undefined) {
          expect(retryAfterMs).toBeGreaterThan(0)
          expect(retryAfterMs).toBeLessThanOrEqual(LEASE_MS)
        }
      }
    })

    it('lets a claim whose lease ran out be claimed again, and refuses the stale token', async () => {
      const instance = fleet()
      const [crashed, survivor] = [await instance(0), await instance(1)]
      const stale = await claimed(crashed, 'evt_lease', shortLeaseMs)
      // The holder never completes nor releases, as if its process died.
      expect((await survivor.claim('evt_lease', LEASE_MS)).status).toBe('processing')

      const fresh = await claimAfterExpiry(survivor, 'evt_lease')
      expect(await crashed.complete('evt_lease', stale)).toBe(false)
      expect(await crashed.release('evt_lease', stale)).toBe(false)
      expect(await survivor.complete('evt_lease', fresh)).toBe(true)
    })

    it('answers done to every later claim of a completed event, also once its lease would have run out', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      const token = await claimed(first, 'evt_done', shortLeaseMs)
      expect(await first.complete('evt_done', token)).toBe(true)
      for (const store of [first, second]) expect(await store.claim('evt_done', LEASE_MS)).toEqual({ status: 'done' })

      expect(await first.complete('evt_done', token)).toBe(false)
      expect(await first.release('evt_done', token)).toBe(false)
      await sleep(shortLeaseMs + 100)
      for (const store of [second, first]) expect(await store.claim('evt_done', LEASE_MS)).toEqual({ status: 'done' })
    })

    it('lets a released event be claimed again, with a new token; the old token is refused', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      const old = await claimed(first, 'evt_released')
      expect(await first.release('evt_released', old)).toBe(true)
      expect(await first.release('evt_released', old)).toBe(false)

      const fresh = await claimed(second, 'evt_released')
      expect(fresh).not.toBe(old)
      expect(await first.complete('evt_released', old)).toBe(false)
      expect(await second.complete('evt_released', fresh)).toBe(true)
      expect(await first.claim('evt_released', LEASE_MS)).toEqual({ status: 'done' })
    })

    it('renews a claim with extend: renewed in time, the holder keeps it well past its first lease', async () => {
      const instance = fleet()
      const [holder, other] = [await instance(0), await instance(1)]
      const token = await claimed(holder, 'evt_renewed', shortLeaseMs)
      const until = Date.now() + shortLeaseMs * 3
      while (Date.now() < until) {
        await sleep(shortLeaseMs / 3)
        expect(await extend(holder, 'evt_renewed', token, shortLeaseMs)).toBe(true)
        expect((await other.claim('evt_renewed', LEASE_MS)).status).toBe('processing')
      }
      // Any instance may renew for the token's holder, and a renewal may lengthen the lease.
      expect(await extend(other, 'evt_renewed', token, LEASE_MS)).toBe(true)
      await sleep(shortLeaseMs + 100)
      const result = await other.claim('evt_renewed', LEASE_MS)
      expect(result.status).toBe('processing')
      if (result.status === 'processing' && (retryAfter || result.retryAfterMs !== undefined)) {
        expect(result.retryAfterMs).toBeGreaterThan(shortLeaseMs)
      }
      expect(await holder.complete('evt_renewed', token)).toBe(true)
      expect(await other.claim('evt_renewed', LEASE_MS)).toEqual({ status: 'done' })
    })

    it('refuses extend for a wrong token, an unclaimed, released or completed event, and a lease another took over', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      const token = await claimed(first, 'evt_extend_owned')
      for (const wrong of [`${token}x`, '']) {
        expect(await extend(second, 'evt_extend_owned', wrong, LEASE_MS)).toBe(false)
      }
      expect(await extend(second, 'evt_extend_never_claimed', token, LEASE_MS)).toBe(false)
      expect((await second.claim('evt_extend_never_claimed', LEASE_MS)).status).toBe('claimed')

      const released = await claimed(first, 'evt_extend_released')
      expect(await first.release('evt_extend_released', released)).toBe(true)
      expect(await extend(first, 'evt_extend_released', released, LEASE_MS)).toBe(false)
      expect((await second.claim('evt_extend_released', LEASE_MS)).status).toBe('claimed')

      // A done marker stays done: extend neither revives the claim nor shortens the retention.
      const done = await claimed(first, 'evt_extend_done')
      expect(await first.complete('evt_extend_done', done)).toBe(true)
      expect(await extend(first, 'evt_extend_done', done, shortLeaseMs)).toBe(false)
      await sleep(shortLeaseMs + 100)
      expect(await second.claim('evt_extend_done', LEASE_MS)).toEqual({ status: 'done' })

      const stale = await claimed(first, 'evt_extend_taken', shortLeaseMs)
      const fresh = await claimAfterExpiry(second, 'evt_extend_taken')
      expect(await extend(first, 'evt_extend_taken', stale, LEASE_MS)).toBe(false)
      expect(await first.complete('evt_extend_taken', stale)).toBe(false)
      expect(await second.complete('evt_extend_taken', fresh)).toBe(true)

      expect(await first.complete('evt_extend_owned', token)).toBe(true)
    })

    it('lets an instance join later (init, when present, run again too) and see the claims and done markers made', async () => {
      const instance = fleet()
      const early = await instance(0)
      await early.complete('evt_joined_done', await claimed(early, 'evt_joined_done'))
      const held = await claimed(early, 'evt_joined_held')

      const late = await instance(1)
      // The receiver tries init again after a failure, so a second run must keep the data too.
      await late.init?.()
      expect(await late.claim('evt_joined_done', LEASE_MS)).toEqual({ status: 'done' })
      expect((await late.claim('evt_joined_held', LEASE_MS)).status).toBe('processing')
      expect(await late.complete('evt_joined_held', held)).toBe(true)
      expect(await early.claim('evt_joined_held', LEASE_MS)).toEqual({ status: 'done' })
    })

    it('advertises maxConcurrentEvents, if at all, as a positive whole number the receiver accepts', async () => {
      const { maxConcurrentEvents } = await fleet()()
      const valid = Number.isSafeInteger(maxConcurrentEvents) && (maxConcurrentEvents as number) >= 1
      expect(maxConcurrentEvents === undefined || valid, `maxConcurrentEvents: ${maxConcurrentEvents}`).toBe(true)
    })

    digestTests({ fleet, claimed, claimAfterExpiry, leaseMs: LEASE_MS, shortLeaseMs, digests })
    // Ordering fences (issue 24): for stores that say they keep them (`store.ordering`).
    if (options.ordering ?? true) orderingTests({ fleet, claimed, claimAfterExpiry, leaseMs: LEASE_MS, shortLeaseMs })
    else {
      it('ordering: says it keeps no fences, so a receiver refuses ordering rules on it', async () => {
        expect((await fleet()()).ordering).not.toBe(true)
      })
    }
  })
}
