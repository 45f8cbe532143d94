import type { HeldOrderingKey, OrderingPosition, WebhookStore } from '@payhooks/core'
import { expect, it } from 'vitest'
import { sleep } from './context.js'
import type { ContractContext } from './types.js'

const T0 = Date.parse('2026-11-03T08:00:00Z')
const position = (key: string, eventType = 'transaction_settled'): OrderingPosition => ({ key, at: T0, eventType })
/** How far the store's clock may be from this process's. */
const SKEW_MS = 1000

async function claimKey(store: WebhookStore, eventId: string, key: string, leaseMs: number, eventType?: string) {
  const result = await store.claim(eventId, leaseMs, undefined, position(key, eventType))
  if (result.status !== 'claimed') throw new Error(`expected ${eventId} to be claimed, got ${result.status}`)
  return { token: result.token, fencingToken: result.fencingToken as number }
}

function heldKeys(store: WebhookStore, limit = 100): Promise<HeldOrderingKey[]> {
  if (!store.heldKeys) throw new Error('expected heldKeys')
  return Promise.resolve(store.heldKeys({ limit }))
}

/**
 * The tests of `store.heldKeys` (the ordering keys held now), inside the ordering tests: for a store that has it,
 * or that `options.heldKeys` says must.
 */
export function heldKeyTests(context: ContractContext): void {
  const { fleet, leaseMs: LEASE_MS, shortLeaseMs } = context

  it('heldKeys: lists the keys live claims hold, longest held first, across instances, with the holder', async () => {
    const instance = fleet()
    const [one, two] = [await instance(0), await instance(1)]
    if (!one.heldKeys) {
      expect(context.heldKeys, `${context.name} has no heldKeys(options)`).not.toBe(true)
      return
    }
    expect(await heldKeys(two)).toEqual([])
    const before = Date.now()
    const first = await claimKey(one, 'evt_h1', 'txn_h1', LEASE_MS)
    await sleep(20)
    const second = await claimKey(two, 'evt_h2', 'txn_h2', LEASE_MS, 'transaction_returned')
    const after = Date.now()
    const held = await heldKeys(two)
    expect(held.map((h) => [h.key, h.eventId, h.eventType, h.token])).toEqual([
      ['txn_h1', 'evt_h1', 'transaction_settled', first.fencingToken],
      ['txn_h2', 'evt_h2', 'transaction_returned', second.fencingToken],
    ])
    for (const h of held) {
      expect(h.since).toBeInstanceOf(Date)
      expect(h.since.getTime()).toBeGreaterThanOrEqual(before - SKEW_MS)
      expect(h.since.getTime()).toBeLessThanOrEqual(after + SKEW_MS)
      expect(h.expiresAt.getTime() - h.since.getTime()).toBeGreaterThanOrEqual(LEASE_MS - 50)
      expect(h.expiresAt.getTime() - h.since.getTime()).toBeLessThanOrEqual(LEASE_MS + 50)
    }
    expect((held[0] as HeldOrderingKey).since.getTime()).toBeLessThanOrEqual(
      (held[1] as HeldOrderingKey).since.getTime(),
    )
    expect((await heldKeys(one, 1)).map((h) => h.key)).toEqual(['txn_h1'])
    // A claim refused for the key changes nothing; a completed or released claim frees its key.
    const refused = await two.claim('evt_h3', LEASE_MS, undefined, position('txn_h1'))
    expect(refused.status).toBe('processing')
    // A store that lists held keys also says since when the key is held, for the 409's message.
    if (refused.status === 'processing') {
      expect(refused.keyHeldSince).toBeTypeOf('number')
      expect(Math.abs((refused.keyHeldSince as number) - (held[0] as HeldOrderingKey).since.getTime())).toBeLessThan(5)
    }
    expect((await heldKeys(one)).map((h) => h.eventId)).toEqual(['evt_h1', 'evt_h2'])
    expect(await one.complete('evt_h1', first.token)).toBe(true)
    expect((await heldKeys(one)).map((h) => h.key)).toEqual(['txn_h2'])
    expect(await two.release('evt_h2', second.token)).toBe(true)
    expect(await heldKeys(one)).toEqual([])
  })

  it('heldKeys: a claim whose lease ran out is not listed; extend moves expiresAt', async () => {
    const store = await fleet()()
    if (!store.heldKeys) {
      expect(context.heldKeys, `${context.name} has no heldKeys(options)`).not.toBe(true)
      return
    }
    await claimKey(store, 'evt_hl1', 'txn_hl1', shortLeaseMs)
    const renewed = await claimKey(store, 'evt_hl2', 'txn_hl2', shortLeaseMs)
    expect((await heldKeys(store)).map((h) => h.key).sort()).toEqual(['txn_hl1', 'txn_hl2'])
    if (!store.extend) throw new Error('the contract requires extend')
    expect(await store.extend('evt_hl2', renewed.token, LEASE_MS)).toBe(true)
    await sleep(shortLeaseMs + 100)
    const held = await heldKeys(store)
    expect(held.map((h) => h.key)).toEqual(['txn_hl2'])
    expect((held[0] as HeldOrderingKey).expiresAt.getTime()).toBeGreaterThan(Date.now() + LEASE_MS - 5000)
    // The lapsed key is taken again: listed with its new holder.
    const again = await claimKey(store, 'evt_hl3', 'txn_hl1', LEASE_MS)
    const listed = (await heldKeys(store)).find((h) => h.key === 'txn_hl1')
    expect(listed?.eventId).toBe('evt_hl3')
    expect(listed?.token).toBe(again.fencingToken)
  })
}
