import type { OrderingPosition, WebhookStore } from '@payhooks/core'
import { expect, it } from 'vitest'
import { sleep } from './context.js'
import type { ContractContext } from './types.js'

const T0 = Date.parse('2026-11-03T08:00:00Z')
const position = (key: string, at: number, eventType = 'transaction_settled'): OrderingPosition => ({
  key,
  at,
  eventType,
})

/** Claims `eventId` at `at` of `key`, failing when it is not claimed; the token and the mark it was answered. */
async function claimAt(store: WebhookStore, eventId: string, at: OrderingPosition, leaseMs: number) {
  const result = await store.claim(eventId, leaseMs, undefined, at)
  if (result.status !== 'claimed') throw new Error(`expected ${eventId} to be claimed, got ${result.status}`)
  return { token: result.token, newest: result.newest }
}

/** Completes `eventId` at `at` of `key` in one go, as a receiver whose handlers succeeded does. */
async function handle(store: WebhookStore, eventId: string, at: OrderingPosition, leaseMs: number) {
  const { token, newest } = await claimAt(store, eventId, at, leaseMs)
  expect(await store.complete(eventId, token)).toBe(true)
  return newest
}

/**
 * The tests of ordering fences (`store.ordering`, `claim`'s fourth argument), inside the contract's `describe`. Run
 * only for a store that says it keeps them.
 */
export function orderingTests(context: ContractContext): void {
  const { fleet, leaseMs: LEASE_MS, shortLeaseMs } = context

  it('ordering: answers the key high-water mark with the claim, moved by complete, across instances', async () => {
    const instance = fleet()
    const [one, two] = [await instance(0), await instance(1)]
    expect(await handle(one, 'evt_o1', position('txn_1', T0), LEASE_MS)).toBeUndefined()
    const newest = await handle(two, 'evt_o2', position('txn_1', T0 + 2000, 'transaction_returned'), LEASE_MS)
    expect(newest).toEqual({ at: T0, eventType: 'transaction_settled', eventId: 'evt_o1' })
    expect(await handle(one, 'evt_o3', position('txn_1', T0 + 1000), LEASE_MS)).toEqual({
      at: T0 + 2000,
      eventType: 'transaction_returned',
      eventId: 'evt_o2',
    })
    // evt_o3 was older: the mark stays at evt_o2. Another key has a mark of its own.
    expect((await handle(two, 'evt_o4', position('txn_1', T0 + 3000), LEASE_MS))?.eventId).toBe('evt_o2')
    expect(await handle(one, 'evt_o5', position('txn_2', T0), LEASE_MS)).toBeUndefined()
  })

  it('ordering: orders a tie on time by event type, then event id', async () => {
    const store = await fleet()()
    await handle(store, 'evt_b', position('txn_tie', T0, 'transaction_settled'), LEASE_MS)
    await handle(store, 'evt_a', position('txn_tie', T0, 'transaction_returned'), LEASE_MS)
    expect((await handle(store, 'evt_c', position('txn_tie', T0 - 1), LEASE_MS))?.eventId).toBe('evt_b')
    await handle(store, 'evt_d', position('txn_tie', T0, 'transaction_settled'), LEASE_MS)
    expect((await handle(store, 'evt_e', position('txn_tie', T0 - 1), LEASE_MS))?.eventId).toBe('evt_d')
  })

  it('ordering: one event of a key at a time; a release frees the key without moving the mark', async () => {
    const instance = fleet()
    const [one, two] = [await instance(0), await instance(1)]
    await handle(one, 'evt_k0', position('txn_k', T0), LEASE_MS)
    const first = await claimAt(one, 'evt_k1', position('txn_k', T0 + 1000), LEASE_MS)
    const meanwhile = await two.claim('evt_k2', LEASE_MS, undefined, position('txn_k', T0 + 2000))
    expect(meanwhile.status).toBe('processing')
    if (meanwhile.status === 'processing' && meanwhile.retryAfterMs !== undefined) {
      expect(meanwhile.retryAfterMs).toBeGreaterThan(0)
      expect(meanwhile.retryAfterMs).toBeLessThanOrEqual(LEASE_MS)
    }
    // The refused event holds nothing: it is claimable once the key is free.
    expect(await one.release('evt_k1', first.token)).toBe(true)
    const second = await claimAt(two, 'evt_k2', position('txn_k', T0 + 2000), LEASE_MS)
    expect(second.newest?.eventId).toBe('evt_k0')
    expect(await two.complete('evt_k2', second.token)).toBe(true)
    // The released event, handled later, is then superseded by evt_k2.
    expect((await claimAt(one, 'evt_k1', position('txn_k', T0 + 1000), LEASE_MS)).newest?.eventId).toBe('evt_k2')
  })

  it('ordering: the key is held as long as the claim: it runs out with the lease, and extend renews it', async () => {
    const store = await fleet()()
    await claimAt(store, 'evt_l1', position('txn_l', T0), shortLeaseMs)
    await sleep(shortLeaseMs + 100)
    const after = await claimAt(store, 'evt_l2', position('txn_l', T0 + 1), shortLeaseMs)
    expect(after.newest).toBeUndefined()
    if (!store.extend) throw new Error('the contract requires extend')
    expect(await store.extend('evt_l2', after.token, LEASE_MS)).toBe(true)
    await sleep(shortLeaseMs + 100)
    expect((await store.claim('evt_l3', LEASE_MS, undefined, position('txn_l', T0 + 2))).status).toBe('processing')
  })
}
