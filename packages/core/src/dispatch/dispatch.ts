import { InternalError, StoreError, WebhookError } from '../errors/index.js'
import { runHandlers } from '../event-handler/index.js'
import { claimPosition, type OrderingMark, type OrderingPosition, orderingOf } from '../ordering/index.js'
import type { ClaimResult } from '../store.js'
import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { DispatchOutcome, HandlerContext, VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { Attempt } from './attempt.js'
import { SignalContext } from './handler-context.js'
import { holdLease } from './lease.js'
import { claimedRun, complete, runningHere, stopped } from './outcome.js'
import { type DispatchState, initStore } from './store-calls.js'
import { dispatchInTransaction } from './transactional.js'

/**
 * Claims the event in the store, runs its handlers (renewing the claim meanwhile, until they settle), then completes the claim, or
 * lets the store commit the handlers' writes with the done marker when it has `transaction`; when a handler
 * fails, releases the claim and throws {@link HandlerError}. Throws {@link StoreError} when the store cannot
 * init or claim (or its transaction fails or loses the claim).
 *
 * Synchronous as long as everything it calls is: a store answering with values (the memory store) and handlers
 * returning no promise give the outcome itself, with no promise, timer or tracked run made (profiling showed
 * those at about a fifth of `receive()`'s own time). The first promise an answer carries switches to the
 * asynchronous path; it may also throw synchronously.
 */
export function dispatch(
  state: DispatchState,
  event: VerifiedEvent,
  attempt: Attempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  const { event_id: eventId, event_type: eventType } = event
  const { store, leaseMs } = state
  if (!state.initialized || store.transaction) return dispatchAsync(state, event, attempt)
  const scope = attempt.scope
  const position = claimPosition(state.ordering, event, attempt.answered)
  if (position !== undefined) attempt.onOrderingKey?.(position.key)
  const here = runningHere(state, event, attempt, position)
  if (here !== undefined) return here
  let claim: ClaimResult | PromiseLike<ClaimResult>
  const claimedAt = Date.now()
  try {
    const digest = attempt.digest
    claim = scope
      ? scope.store('claim', () => store.claim(eventId, leaseMs, digest, position))
      : store.claim(eventId, leaseMs, digest, position)
  } catch (cause) {
    throw new StoreError('claim', cause, eventId, eventType)
  }
  if (isThenable(claim)) {
    return Promise.resolve(claim).then(
      (claimed) => afterClaim(state, event, attempt, claimed, claimedAt, position),
      (cause: unknown) => {
        throw new StoreError('claim', cause, eventId, eventType)
      },
    )
  }
  return afterClaim(state, event, attempt, claim, claimedAt, position)
}

function afterClaim(
  state: DispatchState,
  event: VerifiedEvent,
  attempt: Attempt,
  claim: ClaimResult,
  claimedAt: number,
  position: OrderingPosition | undefined,
): DispatchOutcome | Promise<DispatchOutcome> {
  const run = claimedRun(state, event, attempt, claim, position)
  if ('status' in run) return run
  const scope = attempt.scope
  const claims = state.claims
  if (claims.stopped) return stopped(state, run, scope)
  const ordering =
    position && orderingOf(position, run.eventId, claim as { newest?: OrderingMark; fencingToken?: number })
  const context = new SignalContext(run.controller, attempt.verifiedWith, ordering) as unknown as HandlerContext
  const errors = runHandlers(state.eventHandler, event, context, scope)
  if (!isThenable(errors)) return complete(state, run, attempt, errors)
  // The handlers went asynchronous: from now on the claim needs renewing, and `close` may have to abort them. The
  // dispatch ends when they settle, however long that takes (past `maxRunMs` the run is hung, its claim still held).
  claims.hold(run)
  const lease = holdLease(state, run, claimedAt, attempt)
  return errors.then((failures) => {
    lease.stop()
    claims.drop(run)
    return complete(state, run, attempt, failures)
  })
}

/**
 * The store's one-time `init` (tried again by the next delivery after a failure), then {@link dispatch}; or, for a
 * store with transactions, the claim and the handlers inside its transaction.
 */
async function dispatchAsync(state: DispatchState, event: VerifiedEvent, attempt: Attempt): Promise<DispatchOutcome> {
  if (!state.initialized) await initStore(state, event, attempt.scope)
  if (!state.store.transaction) return dispatch(state, event, attempt)
  return dispatchInTransaction(state, event, attempt)
}

/** Ends a dispatch's telemetry scope with what the dispatch resolved or rejected with. */
export function observeDispatch(scope: TelemetryScope, result: Promise<DispatchOutcome>, event: VerifiedEvent): void {
  result.then(
    (done) => scope.end({ outcome: done.status }),
    (error: unknown) => {
      const failure = error instanceof WebhookError ? error : new InternalError(error, event)
      scope.end({ outcome: failure.code, error: failure })
    },
  )
}
