import type { DispatchOutcome, VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { Attempt } from './attempt.js'
import { dispatch } from './dispatch.js'
import type { Slots, SlotWaiter } from './slots.js'
import type { DispatchState } from './store-calls.js'

/** The receiver's slots: undefined when `maxConcurrentEvents` is unbounded. */
export interface SlotState extends DispatchState {
  readonly slots: Slots | undefined
}

/** An attempt that may wait for a slot: `waiting` is set while it does, so its deadline can withdraw it. */
export interface SlotAttempt extends Attempt {
  waiting?: SlotWaiter | undefined
  /** When the attempt must be answered (`Date.now()` clock): a delivery's deadline; none for a queue worker's. */
  readonly due?: number
}

/**
 * {@link dispatch} once the event has one of the receiver's slots: at once (and synchronously, as `dispatch` may
 * be) while one is free, else when {@link Slots} grants one. The slot is given back when the dispatch settles,
 * with how long it was held. Nothing is claimed while waiting; a wait refused or withdrawn rejects (or, refused
 * at once, throws) with `BusyError`.
 */
export function dispatchInSlot(
  state: SlotState,
  event: VerifiedEvent,
  attempt: SlotAttempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  const slots = state.slots
  if (slots === undefined) return dispatch(state, event, attempt)
  if (slots.take()) return inSlot(slots, state, event, attempt)
  const waiter = slots.wait(event, attempt.due || undefined)
  attempt.waiting = waiter
  return waiter.granted.then(() => {
    attempt.waiting = undefined
    return inSlot(slots, state, event, attempt)
  })
}

/** {@link dispatchInSlot}, always as a promise (a synchronous throw becomes a rejection). */
export function dispatchInSlotPromise(
  state: SlotState,
  event: VerifiedEvent,
  attempt: SlotAttempt,
): Promise<DispatchOutcome> {
  try {
    return Promise.resolve(dispatchInSlot(state, event, attempt))
  } catch (error) {
    return Promise.reject(error)
  }
}

function inSlot(
  slots: Slots,
  state: SlotState,
  event: VerifiedEvent,
  attempt: Attempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  const startedAt = Date.now()
  let outcome: DispatchOutcome | Promise<DispatchOutcome>
  try {
    outcome = dispatch(state, event, attempt)
  } catch (error) {
    slots.give(Date.now() - startedAt)
    throw error
  }
  if (!isThenable(outcome)) {
    slots.give(Date.now() - startedAt)
    return outcome
  }
  return outcome.then(
    (done) => {
      slots.give(heldFor(attempt, startedAt))
      return done
    },
    (error: unknown) => {
      slots.give(heldFor(attempt, startedAt))
      throw error
    },
  )
}

/** How long the slot was held; none for a hung run, which says nothing of usual runs (it would refuse every waiter). */
function heldFor(attempt: Attempt, startedAt: number): number | undefined {
  return attempt.hung ? undefined : Date.now() - startedAt
}
