import { HandlerError, StoreError } from '../errors/index.js'
import { isTransactionAborted } from '../errors/transaction-aborted.js'
import { runHandlers } from '../event-handler/index.js'
import { claimPosition, type Ordering, type OrderingMark, orderingOf } from '../ordering/index.js'
import type { ClaimResult, TransactionOutcome } from '../store.js'
import type { DispatchOutcome, VerifiedEvent } from '../types.js'
import type { Attempt } from './attempt.js'
import type { Run } from './claims.js'
import { withSignal } from './handler-context.js'
import { holdLease, type Lease } from './lease.js'
import { claimedRun, runningHere, stopped } from './outcome.js'
import { type DispatchState, releaseClaim, storeCall } from './store-calls.js'

/** For a store with transactions: the claim, then the handlers inside its transaction with the done marker. */
export async function dispatchInTransaction(
  state: DispatchState,
  event: VerifiedEvent,
  attempt: Attempt,
): Promise<DispatchOutcome> {
  const { event_id: eventId, event_type: eventType } = event
  const { store, leaseMs, claims } = state
  const scope = attempt.scope
  const position = claimPosition(state.ordering, event, attempt.answered)
  if (position !== undefined) attempt.onOrderingKey?.(position.key)
  const here = runningHere(state, event, attempt, position)
  if (here !== undefined) return here
  let claim: ClaimResult
  const claimedAt = Date.now()
  try {
    claim = await storeCall(scope, 'claim', () => store.claim(eventId, leaseMs, attempt.digest, position))
  } catch (cause) {
    throw new StoreError('claim', cause, eventId, eventType)
  }
  const run = claimedRun(state, event, attempt, claim, position)
  if ('status' in run) return run
  if (claims.stopped) return stopped(state, run, scope)
  const ordering = position && orderingOf(position, eventId, claim as { newest?: OrderingMark; fencingToken?: number })
  claims.hold(run)
  const lease = holdLease(state, run, claimedAt, attempt)
  try {
    return await runInTransaction(state, event, run, lease, attempt, ordering)
  } finally {
    lease.stop()
    claims.drop(run)
  }
}

/**
 * The store runs the handlers inside its transaction and commits the done marker with their writes. Handlers
 * overrunning `maxRunMs` are hung: the transaction waits for them, its claim renewed (a retry is answered 409).
 */
async function runInTransaction(
  state: DispatchState,
  event: VerifiedEvent,
  run: Run,
  lease: Lease,
  attempt: Attempt,
  ordering: Ordering | undefined,
): Promise<DispatchOutcome> {
  const { eventId, eventType, token } = run
  const scope = attempt.scope
  let errors: unknown[] | undefined
  let outcome: TransactionOutcome
  const work = async (context: object) => {
    errors = await runHandlers(
      state.eventHandler,
      event,
      withSignal(context, run.controller, attempt.verifiedWith, ordering),
      scope,
    )
    // The marker is written next, in the transaction: renewing now would only wait on its row lock.
    lease.stop()
    return errors.length === 0
  }
  try {
    outcome = await storeCall(scope, 'transaction', () => state.store.transaction!(eventId, token, work))
  } catch (cause) {
    // Rolled back, or the commit's outcome is unknown: releasing never touches a done marker, so either way
    // the retry finds the truth.
    lease.stop()
    await releaseClaim(state, run, scope)
    // The handlers left the transaction unable to commit: their failure, whatever they resolved.
    if (isTransactionAborted(cause)) throw new HandlerError(eventId, eventType, [cause], attempt.answered)
    // The store failed (its connection lost, say), even when a handler failed with it: 503, as for any store
    // failure, since a handler's error is then most likely that same lost connection.
    throw new StoreError('transaction', cause, eventId, eventType)
  }
  if (outcome === 'committed') return { status: 'processed' }
  if (outcome === 'rolled_back') {
    await releaseClaim(state, run, scope)
    throw new HandlerError(eventId, eventType, errors ?? [], attempt.answered)
  }
  const lost = new Error(
    "claim lost before commit (its lease ran out, as for a process frozen past it, and another delivery may have taken its event or ordering key); the handlers' writes were rolled back and a retry runs them again",
  )
  throw new StoreError('complete', lost, eventId, eventType)
}
