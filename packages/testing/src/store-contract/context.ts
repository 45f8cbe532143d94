import type { WebhookStore } from '@payhooks/core'
import { expect } from 'vitest'
import { fleetNamespace, makeFleet } from '../fleet.js'
import type { ContractContext, Fleet, StoreContractOptions, StoreFactory } from './types.js'

/** Lease of the claims that must not run out during a test. */
const LEASE_MS = 60_000
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The context of the contract's suites on `makeStore`, with `options` resolved; every instance it makes joins
 * `made`, for the contract to shut down after each test.
 */
export function contractContext(
  name: string,
  makeStore: StoreFactory,
  options: StoreContractOptions,
  made: Set<WebhookStore>,
): ContractContext {
  const shortLeaseMs = options.shortLeaseMs ?? 600
  const claimants = options.claimants ?? 8
  const races = options.races ?? 25
  const retryAfter = options.retryAfter ?? true
  const digests = options.digests ?? true

  /** Instances of one fleet, in a namespace of this test's own; instance(i) is made on first use. */
  function fleet(): Fleet {
    return makeFleet(fleetNamespace(name), makeStore, made)
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

  return {
    name,
    fleet,
    claimed,
    claimAfterExpiry,
    extend,
    leaseMs: LEASE_MS,
    shortLeaseMs,
    claimants,
    races,
    retryAfter,
    digests,
    heldKeys: options.heldKeys ?? false,
  }
}
