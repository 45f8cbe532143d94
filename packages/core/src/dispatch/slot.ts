import type { Bulkheads } from '../bulkheads/bulkheads.js'
import type { DispatchOutcome, VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { Attempt } from './attempt.js'
import { dispatch } from './dispatch.js'
import type { Slots, SlotWaiter } from './slots.js'
import type { DispatchState } from './store-calls.js'

/** The receiver's slots: undefined when `maxConcurrentEvents` is unbounded; and its bulkheads between event types. */
export interface SlotState extends DispatchState {
  readonly slots: Slots | undefined
  readonly bulkheads?: Bulkheads | undefined
}

/** An attempt that may wait for a slot: `waiting` is set while it does, so its deadline can withdraw it. */
export interface SlotAttempt extends Attempt {
  waiting?: SlotWaiter | undefined
  /** When the attempt must be answered (`Date.now()` clock): a delivery's deadline; none for a queue worker's. */
  readonly due?: number
}

/**
 * {@link dispatch} once the event has one of the receiver's slots: at once (and synchronously, as `dispatch` may
 * be) while one is free, else when {@link Slots} grants one. With bulkheads, first one of its type's share of them
 * (its lane's `Slots`, waited for the same way): a type holding its share waits for its own slots, never for the
 * others'. A quarantined type is refused at once with `QuarantinedError`. The slots are given back when the dispatch
 * settles, with how long they were held. Nothing is claimed while waiting; a wait refused or withdrawn rejects (or,
 * refused at once, throws) with `BusyError`. A copy of an event running here takes no slot: it is answered at once.
 */
export function dispatchInSlot(
  state: SlotState,
  event: VerifiedEvent,
  attempt: SlotAttempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  // A copy of an event still running here is answered 409 in_progress without asking the store: it takes no slot,
  // so the answer does not depend on whether other deliveries fill them meanwhile (it was 503 busy when they did).
  if (state.claims.runOf(event.event_id) !== undefined) return dispatch(state, event, attempt)
  const bulkheads = state.bulkheads
  const lane = bulkheads === undefined ? undefined : bulkheads.lane(event.event_type)
  if (lane !== undefined && lane.quarantinedSince !== 0) throw (bulkheads as Bulkheads).refusal(lane, event)
  const slots = state.slots
  if (slots === undefined) return dispatch(state, event, attempt)
  const share = lane?.slots
  if (share === undefined || share.take()) return inSlots(slots, share, state, event, attempt)
  const waiter = share.wait(event, attempt.due || undefined)
  attempt.waiting = waiter
  return waiter.granted.then(() => {
    attempt.waiting = undefined
    if (lane !== undefined && lane.quarantinedSince !== 0) {
      share.give()
      throw (bulkheads as Bulkheads).refusal(lane, event)
    }
    return inSlots(slots, share, state, event, attempt)
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

/** With its type's share (if any) held: one of the receiver's slots, at once or once granted. */
function inSlots(
  slots: Slots,
  share: Slots | undefined,
  state: SlotState,
  event: VerifiedEvent,
  attempt: SlotAttempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  if (slots.take()) return inSlot(slots, share, state, event, attempt)
  let waiter: SlotWaiter
  try {
    waiter = slots.wait(event, attempt.due || undefined)
  } catch (error) {
    share?.give()
    throw error
  }
  attempt.waiting = waiter
  return waiter.granted.then(
    () => {
      attempt.waiting = undefined
      return inSlot(slots, share, state, event, attempt)
    },
    (error: unknown) => {
      share?.give()
      throw error
    },
  )
}

function inSlot(
  slots: Slots,
  share: Slots | undefined,
  state: SlotState,
  event: VerifiedEvent,
  attempt: Attempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  const startedAt = Date.now()
  let outcome: DispatchOutcome | Promise<DispatchOutcome>
  try {
    outcome = dispatch(state, event, attempt)
  } catch (error) {
    giveBack(slots, share, Date.now() - startedAt)
    throw error
  }
  if (!isThenable(outcome)) {
    giveBack(slots, share, Date.now() - startedAt)
    return outcome
  }
  return outcome.then(
    (done) => {
      giveBack(slots, share, heldFor(attempt, startedAt))
      return done
    },
    (error: unknown) => {
      giveBack(slots, share, heldFor(attempt, startedAt))
      throw error
    },
  )
}

function giveBack(slots: Slots, share: Slots | undefined, heldMs: number | undefined): void {
  share?.give(heldMs)
  slots.give(heldMs)
}

/** How long the slot was held; none for a hung run, which says nothing of usual runs (it would refuse every waiter). */
function heldFor(attempt: Attempt, startedAt: number): number | undefined {
  return attempt.hung ? undefined : Date.now() - startedAt
}
