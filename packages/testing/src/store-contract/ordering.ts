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
  const { fencingToken } = result
  if (typeof fencingToken !== 'number' || !Number.isSafeInteger(fencingToken) || fencingToken <= 0) {
    throw new Error(
      `expected the claim of ${eventId} to give a fencingToken (a positive whole number), got ${fencingToken}`,
    )
  }
  return { token: result.token, newest: result.newest, fencingToken }
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
  const { fleet, extend, leaseMs: LEASE_MS, shortLeaseMs } = context

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

  it('ordering: each claim of a key gets a greater fencing token, across instances, releases and lapsed leases', async () => {
    const instance = fleet()
    const [one, two] = [await instance(0), await instance(1)]
    const tokens: number[] = []
    const first = await claimAt(one, 'evt_t1', position('txn_t', T0), LEASE_MS)
    tokens.push(first.fencingToken)
    expect(await one.release('evt_t1', first.token)).toBe(true)
    const second = await claimAt(two, 'evt_t1', position('txn_t', T0), shortLeaseMs)
    tokens.push(second.fencingToken)
    await sleep(shortLeaseMs + 100)
    const third = await claimAt(one, 'evt_t2', position('txn_t', T0 + 1), LEASE_MS)
    tokens.push(third.fencingToken)
    expect(await one.complete('evt_t2', third.token)).toBe(true)
    tokens.push((await claimAt(two, 'evt_t3', position('txn_t', T0 + 2), LEASE_MS)).fencingToken)
    for (let i = 1; i < tokens.length; i++) expect(tokens[i]).toBeGreaterThan(tokens[i - 1] as number)
  })

  it('ordering: a holder frozen past its lease, once a newer event of its key was handled, can neither renew nor mark its event done; its retry is superseded', async () => {
    const instance = fleet()
    const [frozen, other] = [await instance(0), await instance(1)]
    const stale = await claimAt(frozen, 'evt_f1', position('txn_f', T0), shortLeaseMs)
    await sleep(shortLeaseMs + 100)
    const newer = await claimAt(other, 'evt_f2', position('txn_f', T0 + 1000, 'transaction_returned'), LEASE_MS)
    expect(newer.fencingToken).toBeGreaterThan(stale.fencingToken)
    expect(await other.complete('evt_f2', newer.token)).toBe(true)
    // The frozen holder wakes: its renewal, its transaction's commit and its done marker are all refused.
    expect(await extend(frozen, 'evt_f1', stale.token, LEASE_MS)).toBe(false)
    if (frozen.transaction) expect(await frozen.transaction('evt_f1', stale.token, async () => true)).toBe('lost')
    expect(await frozen.complete('evt_f1', stale.token)).toBe(false)
    const retry = await claimAt(other, 'evt_f1', position('txn_f', T0), LEASE_MS)
    expect(retry.newest?.eventId).toBe('evt_f2')
    expect(retry.fencingToken).toBeGreaterThan(newer.fencingToken)
    expect(await other.complete('evt_f1', retry.token)).toBe(true)
    expect((await claimAt(frozen, 'evt_f3', position('txn_f', T0 - 1), LEASE_MS)).newest?.eventId).toBe('evt_f2')
  })

  it('ordering: a holder whose lease ran out cannot mark its event done even when no other claim took its key', async () => {
    const store = await fleet()()
    const lapsed = await claimAt(store, 'evt_g1', position('txn_g', T0), shortLeaseMs)
    await sleep(shortLeaseMs + 100)
    expect(await extend(store, 'evt_g1', lapsed.token, LEASE_MS)).toBe(false)
    if (store.transaction) expect(await store.transaction('evt_g1', lapsed.token, async () => true)).toBe('lost')
    expect(await store.complete('evt_g1', lapsed.token)).toBe(false)
    // Its retry runs it again, under a greater fencing token.
    const retry = await claimAt(store, 'evt_g1', position('txn_g', T0), LEASE_MS)
    expect(retry.fencingToken).toBeGreaterThan(lapsed.fencingToken)
    expect(await store.complete('evt_g1', retry.token)).toBe(true)
  })
}
