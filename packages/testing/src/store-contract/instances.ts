import { expect, it } from 'vitest'
import type { ContractContext } from './types.js'

/** The tests of a fleet's instances: one that joins later, and the `maxConcurrentEvents` one advertises. */
export function instanceTests(context: ContractContext): void {
  const { fleet, claimed, leaseMs: LEASE_MS } = context

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
}
