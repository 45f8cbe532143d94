import { type ParkState, park } from '../dead-letters/index.js'
import { type DispatchState, initStore, releaseClaim, storeCall } from '../dispatch/index.js'
import { claimedRun } from '../dispatch/outcome.js'
import { type StaleEventError, StoreError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import { errorAnswer, inProgress, ok } from '../http/answers.js'
import type { ClaimResult } from '../store.js'
import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { RawDelivery, WebhookResult } from '../types.js'
import { cryptoProvider, type RawBody } from './signature.js'

/** What answering an old event needs: the store to ask, and the dead-letter store to park it in. */
export interface StaleState extends DispatchState, ParkState {}

/** The answer to an old event, and how the delivery ended when not in failure. */
export interface StaleAnswer {
  result: WebhookResult
  outcome: 'duplicate' | 'in_progress' | 'parked' | undefined
}

/**
 * The answer to a signed event older than `maxEventAgeMs`. One the store knows as handled is a duplicate (2XX);
 * any other is never acknowledged unhandled: under a claim (so a concurrent delivery cannot run it meanwhile), it
 * is parked when a dead-letter store is configured (200 `parked` once a durable one holds it; a duplicate when the
 * store holds a replayed letter of it), else refused 422 `stale_event`, so the service keeps it; then the claim is
 * released, so a replay runs it. A copy of other bytes than the handled (or parked) one is reported as an
 * `EventConflictError`. Only this path asks the
 * store: fresh events pay nothing for it. Rejects with a {@link StoreError} when the store cannot be asked.
 */
export async function staleAnswer(
  state: StaleState,
  received: Pick<RawDelivery, 'getHeader'> & { body: RawBody },
  error: StaleEventError,
  scope: TelemetryScope | undefined,
): Promise<StaleAnswer> {
  const { event } = error
  const { event_id: eventId, event_type: eventType } = event
  if (!state.initialized) await initStore(state, event, scope)
  // Claimed with the body's digest, as a fresh delivery is: a copy of other bytes is reported as a conflict.
  const digest = await cryptoProvider.digest(received.body)
  let claim: ClaimResult
  try {
    claim = await storeCall(scope, 'claim', () => state.store.claim(eventId, state.leaseMs, digest))
  } catch (cause) {
    throw new StoreError('claim', cause, eventId, eventType)
  }
  const run = claimedRun(state, event, { answered: false, scope, digest }, claim)
  if ('status' in run) {
    return run.status === 'in_progress'
      ? { result: inProgress(eventId, run.retryAfterMs), outcome: 'in_progress' }
      : { result: ok(eventId, 'duplicate'), outcome: 'duplicate' }
  }
  try {
    if (state.deadLetters) return await park(state, received, error, event, scope)
    report(state.eventHandler, error)
    return { result: errorAnswer(error), outcome: undefined }
  } finally {
    await releaseClaim(state, run, scope)
  }
}
