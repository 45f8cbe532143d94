// Slots under overload: which waiter a freed slot goes to, who is refused at once, and that a withdrawn or refused
// waiter leaves the list. The clock is faked (Slots reads Date.now()), so these are structural, not timed.
import { sampleEvent } from '@payhooks/testing'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { BusyError } from '../errors/index.js'
import type { VerifiedEvent } from '../types.js'
import { Slots, type SlotWaiter } from './slots.js'

const event = (eventId: string) => sampleEvent('transaction_settled', { eventId }) as VerifiedEvent

/** Waits on `slots` and records which waiters were granted and which refused. */
function waitFor(slots: Slots, eventId: string, due: number, log: string[]): SlotWaiter {
  const waiter = slots.wait(event(eventId), due)
  waiter.granted.then(
    () => log.push(`granted ${eventId}`),
    (error: unknown) => log.push(`${error instanceof BusyError ? 'busy' : 'failed'} ${eventId}`),
  )
  return waiter
}

describe('Slots', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(0)
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('leaves the list when a waiter is withdrawn, however many are, while every slot stays taken', async () => {
    const slots = new Slots(1)
    expect(slots.take()).toBe(true)
    const log: string[] = []
    for (let i = 0; i < 2000; i++) waitFor(slots, `evt_${i}`, 5000, log).withdraw()
    expect(slots.waiting).toBe(0)
    await Promise.resolve()
    expect(log.filter((entry) => entry.startsWith('busy'))).toHaveLength(2000)
    // A withdrawn waiter holds no place either: the slot goes to the one still waiting.
    const kept = waitFor(slots, 'evt_kept', 5000, log)
    expect(slots.waiting).toBe(1)
    slots.give(100)
    await kept.granted
    expect(slots.waiting).toBe(0)
    expect(kept.withdraw()).toBe(false)
  })

  it('grants in arrival order while the oldest waited under a quarter of its deadline, then the newest first', async () => {
    const slots = new Slots(1)
    slots.take()
    const log: string[] = []
    for (const id of ['evt_1', 'evt_2', 'evt_3', 'evt_4']) waitFor(slots, id, 4000, log)
    vi.setSystemTime(900) // oldest waited 900 ms of its 4000: in order
    slots.give(100)
    await Promise.resolve()
    expect(log).toEqual(['granted evt_1'])
    vi.setSystemTime(1100) // oldest (evt_2) waited 1100 ms, over a quarter: the newest, with the most time left
    slots.give(100)
    await Promise.resolve()
    expect(log).toEqual(['granted evt_1', 'granted evt_4'])
    expect(slots.waiting).toBe(2)
  })

  it('refuses at once a waiter whose deadline leaves less than 1.5 times the expected run', async () => {
    const slots = new Slots(1)
    slots.take()
    slots.give(400) // expected run: 400 ms
    expect(slots.expectedMs).toBe(400)
    slots.take()
    expect(() => slots.wait(event('evt_late'), 599)).toThrow(BusyError)
    expect(slots.waiting).toBe(0)
    const log: string[] = []
    waitFor(slots, 'evt_in_time', 600, log)
    expect(slots.waiting).toBe(1)
    // Without a deadline (a queue worker's dispatch) a wait is never refused.
    waitFor(slots, 'evt_queued', Number.POSITIVE_INFINITY, log)
    expect(slots.waiting).toBe(2)
  })

  it('refuses, when a slot frees, the waiters that can no longer finish in time, and grants one that can', async () => {
    const slots = new Slots(1)
    slots.take()
    slots.give(200)
    slots.take()
    const log: string[] = []
    waitFor(slots, 'evt_old_1', 1000, log)
    waitFor(slots, 'evt_old_2', 1000, log)
    vi.setSystemTime(400)
    waitFor(slots, 'evt_new', 1400, log)
    vi.setSystemTime(750) // evt_old_* have 250 ms left, under 1.5 × 200
    slots.give(200)
    await Promise.resolve()
    expect(log).toEqual(['busy evt_old_1', 'busy evt_old_2', 'granted evt_new'])
    expect(slots.waiting).toBe(0)
  })

  it('moves the expected run toward recent runs (a moving average)', () => {
    const slots = new Slots(2)
    slots.take()
    slots.give(100)
    slots.take()
    slots.give(600)
    expect(slots.expectedMs).toBe(200)
  })
})
