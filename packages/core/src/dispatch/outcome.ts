import { ClosingError, EventConflictError, HandlerError, StoreError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import type { OrderingPosition } from '../ordering/index.js'
import type { ClaimResult } from '../store.js'
import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { DispatchOutcome, VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { Attempt } from './attempt.js'
import type { Run } from './claims.js'
import { retryDoneMarker } from './done-marker.js'
import { LazyAbortController } from './lazy-abort.js'
import { type DispatchState, releaseClaim } from './store-calls.js'

/**
 * The outcome when the claim is not this delivery's (reporting a copy whose body differs from the one handled),
 * else the run that now holds it.
 */
export function claimedRun(
  state: DispatchState,
  event: VerifiedEvent,
  attempt: Attempt,
  claim: ClaimResult,
  position?: OrderingPosition,
): DispatchOutcome | Run {
  if (claim.status !== 'claimed') return notClaimed(state, event, attempt, claim, position)
  return {
    eventId: event.event_id,
    eventType: event.event_type,
    token: claim.token,
    digest: attempt.digest,
    controller: new LazyAbortController(),
    due: 0,
    prev: undefined,
    next: undefined,
    linked: false,
  }
}

/**
 * A copy of an event whose handlers still run in this process: in progress, without asking the store, which
 * would grant a new claim once the run's lease lapsed (`Claims.runOf`). Undefined when no run holds it here.
 */
export function runningHere(
  state: DispatchState,
  event: VerifiedEvent,
  attempt: Attempt,
  position: OrderingPosition | undefined,
): DispatchOutcome | undefined {
  const run = state.claims.runOf(event.event_id)
  if (run === undefined) return undefined
  const held: ClaimResult = { status: 'processing', retryAfterMs: state.leaseMs, digest: run.digest }
  return notClaimed(state, event, attempt, held, position)
}

function notClaimed(
  state: DispatchState,
  event: VerifiedEvent,
  attempt: Attempt,
  claim: Exclude<ClaimResult, { status: 'claimed' }>,
  position: OrderingPosition | undefined,
): DispatchOutcome {
  const { digest: handled } = claim
  const received = attempt.digest
  const inProgress = claim.status === 'processing'
  if (handled !== undefined && received !== undefined && handled !== received) {
    const conflict = new EventConflictError(event.event_id, event.event_type, received, handled, inProgress)
    attempt.scope?.conflict?.(conflict)
    report(state.eventHandler, conflict)
  }
  if (!inProgress) return { status: 'duplicate' }
  if (position === undefined) return { status: 'in_progress', retryAfterMs: claim.retryAfterMs }
  const { retryAfterMs, keyHeldSince } = claim
  return { status: 'in_progress', retryAfterMs, orderingKey: position.key, keyHeldSince }
}

/** A claim taken once `close` stopped waiting: released at once, and the dispatch refused. */
export async function stopped(state: DispatchState, run: Run, scope: TelemetryScope | undefined): Promise<never> {
  await releaseClaim(state, run, scope)
  throw new ClosingError()
}

/**
 * After the handlers ran: on failure releases the claim and throws {@link HandlerError}, else marks the event done
 * (a store failure then is reported, not thrown: the handlers succeeded).
 */
export function complete(
  state: DispatchState,
  run: Run,
  attempt: Attempt,
  errors: unknown[],
): DispatchOutcome | Promise<DispatchOutcome> {
  const { eventId, eventType, token } = run
  const scope = attempt.scope
  if (errors.length > 0) {
    const failed = () => {
      throw new HandlerError(eventId, eventType, errors, attempt.answered)
    }
    const released = releaseClaim(state, run, scope)
    return released === undefined ? failed() : released.then(failed)
  }
  let completed: boolean | PromiseLike<boolean>
  try {
    completed = scope
      ? scope.store('complete', () => state.store.complete(eventId, token))
      : state.store.complete(eventId, token)
  } catch (cause) {
    completeFailed(state, run, cause)
    return { status: 'processed' }
  }
  if (!isThenable(completed)) {
    if (!completed) claimLost(state, run)
    return { status: 'processed' }
  }
  return Promise.resolve(completed).then(
    (done) => {
      if (!done) claimLost(state, run)
      return { status: 'processed' }
    },
    (cause: unknown) => {
      completeFailed(state, run, cause)
      return { status: 'processed' }
    },
  )
}

function claimLost(state: DispatchState, run: Run): void {
  const lost = new Error('claim lost before completion (its renewal failed); a retry may run the handlers again')
  report(state.eventHandler, new StoreError('complete', lost, run.eventId, run.eventType))
}

/** Handlers succeeded, so the event is handled: it is acknowledged anyway, and its done marker retried behind. */
function completeFailed(state: DispatchState, run: Run, cause: unknown): void {
  retryDoneMarker(state, run, cause)
}
