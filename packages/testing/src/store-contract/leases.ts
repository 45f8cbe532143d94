import { expect, it } from 'vitest'
import { sleep } from './context.js'
import type { ContractContext } from './types.js'

/** The tests of leases: one that ran out, done markers, release, renewal with `extend` and its refusals. */
export function leaseTests(context: ContractContext): void {
  const { fleet, claimed, claimAfterExpiry, extend, leaseMs: LEASE_MS, shortLeaseMs, retryAfter } = context

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

  it('refuses extend, complete and a transaction once the lease ran out, even when no other claim took the event', async () => {
    const store = await fleet()()
    const lapsed = await claimed(store, 'evt_lapsed', shortLeaseMs)
    await sleep(shortLeaseMs + 100)
    expect(await extend(store, 'evt_lapsed', lapsed, LEASE_MS)).toBe(false)
    if (store.transaction) expect(await store.transaction('evt_lapsed', lapsed, async () => true)).toBe('lost')
    expect(await store.complete('evt_lapsed', lapsed)).toBe(false)
    expect(await claimed(store, 'evt_lapsed')).not.toBe(lapsed)
  })
}
