import { expect, it } from 'vitest'
import type { ContractContext } from './types.js'

/** The service's retry period (72 hours): a store must remember a handled event at least this long. */
const RETRY_WINDOW_MS = 72 * 3_600_000

/** The tests of claims: atomicity, the retention said, owner tokens, `processing` with `retryAfterMs`. */
export function claimTests(context: ContractContext): void {
  const { name, fleet, claimed, leaseMs: LEASE_MS, claimants, races, retryAfter } = context

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
}
