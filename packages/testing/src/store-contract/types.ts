import type { WebhookStore } from '@payhooks/core'

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
   * this short; the lease tests wait a little longer than it, and renew it every third of it (at 300 a renewal on a
   * loaded CI machine now and then came after the lease ended).
   * @default 600
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
  /**
   * Whether the store must list the ordering keys held now (`store.heldKeys`, for `webhooks.heldKeys()`). Its tests
   * run whenever the store has the method; true makes a store without it fail them.
   * @default false
   */
  heldKeys?: boolean
}

/** Instances of one store fleet in a namespace of the test's own: `instance(i)` is made (and `init`ed) on first use. */
export type Fleet = (index?: number) => Promise<WebhookStore>

/** What the contract's suites share: its fleets, its claim helpers and its options, resolved. */
export interface ContractContext {
  /** The store's name, as the contract was given it. */
  name: string
  /** Instances of one fleet, in a namespace of the test's own. */
  fleet(): Fleet
  /** Claims `eventId` (with `digest`) and returns the token, failing when it is not claimed. */
  claimed(store: WebhookStore, eventId: string, leaseMs?: number, digest?: string): Promise<string>
  /** Claims `eventId` (with `digest`) as soon as the lease holding it runs out. */
  claimAfterExpiry(store: WebhookStore, eventId: string, digest?: string): Promise<string>
  /** The store's `extend`, which the contract requires (the receiver renews claims with it). */
  extend(
    store: WebhookStore,
    eventId: string,
    token: string,
    leaseMs: number,
  ): ReturnType<NonNullable<WebhookStore['extend']>>
  /** Lease of the claims that must not run out during a test. */
  leaseMs: number
  shortLeaseMs: number
  claimants: number
  races: number
  retryAfter: boolean
  /** Whether the store keeps digests. */
  digests: boolean
  /** Whether the store must have `heldKeys`. */
  heldKeys: boolean
}
