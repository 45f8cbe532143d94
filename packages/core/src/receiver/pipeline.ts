import { onLastTries, park } from '../dead-letters/index.js'
import { dispatchInSlot } from '../dispatch/index.js'
import {
  EventHeldError,
  FutureEventError,
  HandlerError,
  InternalError,
  KeyHeldError,
  QuarantinedError,
  SchemaError,
  StaleEventError,
  StoreError,
  WebhookError,
} from '../errors/index.js'
import { logVerifiedWith } from '../event-handler/index.js'
import { inProgress, ok } from '../http/answers.js'
import { whilePaused } from '../pause/answer.js'
import type { DispatchOutcome, VerifiedEvent, WebhookQueue, WebhookResult } from '../types.js'
import { isThenable } from '../util/thenable.js'
import { cryptoProvider, type RawBody } from '../verify/signature.js'
import { staleAnswer } from '../verify/stale.js'
import { verifyAndParse } from '../verify/verify-and-parse.js'
import { reportedAnswer } from './answer.js'
import type { IncomingDelivery } from './delivery.js'
import type { Engine } from './engine.js'

// After the body: verify → stale? → queue or dispatch → the answer (or park). Synchronous while everything it
// waits on answers synchronously (`node:crypto` with static secrets, the memory store, handlers returning no
// promise), so such a delivery makes no promise, timer or closure of its own; the first promise switches to the
// asynchronous path.

/** The delivery's answer once its bytes are in; a failure (thrown or rejected) is answered too. */
export function processBody(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
): WebhookResult | Promise<WebhookResult> {
  try {
    return afterBody(engine, delivery, body)
  } catch (error) {
    return failedAnswer(engine, delivery, error)
  }
}

/** The answer for a delivery whose processing threw (or rejected). */
export function failedAnswer(engine: Engine, delivery: IncomingDelivery, error: unknown): WebhookResult {
  delivery.error = error instanceof WebhookError ? error : new InternalError(error, delivery.event)
  return reportedAnswer(engine, delivery.error, delivery.raw.remoteAddress)
}

function afterBody(engine: Engine, delivery: IncomingDelivery, body: RawBody): WebhookResult | Promise<WebhookResult> {
  let verified: VerifiedEvent | Promise<VerifiedEvent>
  try {
    verified = verifyAndParse(engine, delivery.raw, body, delivery)
  } catch (error) {
    return refused(engine, delivery, body, error)
  }
  if (verified instanceof Promise) {
    return verified.then(
      (event) => afterVerify(engine, delivery, body, event),
      (error: unknown) => refused(engine, delivery, body, error),
    )
  }
  return afterVerify(engine, delivery, body, verified)
}

/**
 * Verification refused the delivery: an old event is looked up in the store, a schema mismatch parked (with a
 * dead-letter store), any other refusal answered with its error. Anything not a `WebhookError` (a secret
 * resolver's own failure) is rethrown, and answered 500.
 */
function refused(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  error: unknown,
): WebhookResult | Promise<WebhookResult> {
  if (!(error instanceof WebhookError)) throw error
  delivery.error = error
  // Refused after the signature verified: the event's id, type and secret are known, and belong on its span.
  if ((error instanceof SchemaError || error instanceof FutureEventError) && error.eventId && error.eventType) {
    const event = error instanceof SchemaError ? error.event : undefined
    delivery.scope?.event(
      event ?? {
        event_id: error.eventId,
        event_type: error.eventType,
        created_at: (error as FutureEventError).createdAt,
      },
      delivery.verifiedWith,
    )
  }
  if (error instanceof StaleEventError) return answerStale(engine, body, delivery, error)
  return engine.deadLetters && error instanceof SchemaError
    ? parkAnswer(engine, body, delivery, error, error.event)
    : reportedAnswer(engine, error, delivery.raw.remoteAddress)
}

function afterVerify(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  event: VerifiedEvent,
): WebhookResult | Promise<WebhookResult> {
  delivery.event = event
  const verifiedWith = delivery.verifiedWith
  delivery.scope?.event(event, verifiedWith)
  if (verifiedWith && verifiedWith.index > 0) logVerifiedWith(engine.eventHandler, event, verifiedWith)
  // A pause in force (or not read yet): the one check on the hot path, a field of this process's copy.
  if (engine.pauses.active) return whilePaused(engine, delivery, body, event, unpaused)
  return unpaused(engine, delivery, body, event)
}

/** A verified event whose type is not paused: queued, or run now under the store's claim. */
function unpaused(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  event: VerifiedEvent,
): WebhookResult | Promise<WebhookResult> {
  if (engine.queue) return enqueue(engine.queue, event, delivery)
  const digest = cryptoProvider.digest(body)
  if (isThenable(digest)) {
    return digest.then((value) => {
      delivery.digest = value
      return dispatchInline(engine, delivery, body, event)
    })
  }
  delivery.digest = digest
  return dispatchInline(engine, delivery, body, event)
}

/** Runs the event's handlers under the store's claim (made with the body's digest) and answers the outcome. */
function dispatchInline(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  event: VerifiedEvent,
): WebhookResult | Promise<WebhookResult> {
  let outcome: DispatchOutcome | Promise<DispatchOutcome>
  try {
    outcome = dispatchInSlot(engine, event, delivery)
  } catch (error) {
    return dispatchFailed(engine, body, delivery, event, error)
  }
  if (isThenable(outcome)) {
    return outcome.then(
      (done) => answerOutcome(engine, body, delivery, event, done),
      (error: unknown) => dispatchFailed(engine, body, delivery, event, error),
    )
  }
  return answerOutcome(engine, body, delivery, event, outcome)
}

function answerOutcome(
  engine: Engine,
  body: RawBody,
  delivery: IncomingDelivery,
  event: VerifiedEvent,
  outcome: DispatchOutcome,
): WebhookResult | Promise<WebhookResult> {
  delivery.outcome = outcome.status
  if (outcome.status !== 'in_progress') return ok(event.event_id, outcome.status)
  if (engine.deadLetters && onLastTries(event)) return parkHeld(engine, body, delivery, event, outcome)
  return inProgress(event.event_id, outcome.retryAfterMs, outcome)
}

/**
 * An event held back on the service's last tries (its handlers still running in another delivery, or, ordered, its
 * key claimed by another event's): a 409 now could be the last answer it gets, so it is parked; 200 `parked` once a
 * durable store holds it, else the 409. The run holding it goes on: a replay of the letter meanwhile is answered
 * `in_progress`, and after it finds the run's done marker (a duplicate) or, the run having failed, runs it.
 */
async function parkHeld(
  engine: Engine,
  body: RawBody,
  delivery: IncomingDelivery,
  event: VerifiedEvent,
  outcome: DispatchOutcome & { status: 'in_progress' },
): Promise<WebhookResult> {
  const { event_id: eventId, event_type: eventType } = event
  const error =
    outcome.orderingKey === undefined
      ? new EventHeldError(eventId, eventType)
      : new KeyHeldError(outcome.orderingKey, outcome.keyHeldSince, eventId, eventType)
  const parked = await park(engine, { body, getHeader: delivery.raw.getHeader }, error, event, delivery.scope)
  if (parked.outcome === undefined) return inProgress(eventId, outcome.retryAfterMs, outcome)
  delivery.outcome = parked.outcome
  // A letter of it replayed already: handled, a duplicate.
  delivery.error = parked.outcome === 'parked' ? error : undefined
  return parked.result
}

/** An old event: a duplicate when the store knows it as handled, else parked or refused (never run, never lost). */
async function answerStale(
  engine: Engine,
  body: RawBody,
  delivery: IncomingDelivery,
  error: StaleEventError,
): Promise<WebhookResult> {
  delivery.event = error.event
  delivery.scope?.event(error.event, delivery.verifiedWith)
  const { result, outcome } = await staleAnswer(
    engine,
    { body, getHeader: delivery.raw.getHeader },
    error,
    delivery.scope,
  )
  delivery.outcome = outcome
  if (outcome === 'duplicate' || outcome === 'in_progress') delivery.error = undefined
  return result
}

async function enqueue(queue: WebhookQueue, event: VerifiedEvent, delivery: IncomingDelivery): Promise<WebhookResult> {
  const scope = delivery.scope
  try {
    await (scope
      ? scope.store('enqueue', () => queue.enqueue(event, { trace: scope.carrier() }))
      : queue.enqueue(event))
  } catch (cause) {
    throw new StoreError('enqueue', cause, event.event_id, event.event_type)
  }
  delivery.outcome = 'queued'
  return ok(event.event_id, 'queued')
}

/**
 * A handler failure, or a refusal of its quarantined type, on an event signed over 71 hours ago (the service's last
 * tries) is parked; the rest rethrown.
 */
function dispatchFailed(
  engine: Engine,
  body: RawBody,
  delivery: IncomingDelivery,
  event: VerifiedEvent,
  error: unknown,
): Promise<WebhookResult> {
  const parkable = error instanceof HandlerError || error instanceof QuarantinedError
  if (engine.deadLetters && parkable && onLastTries(event)) {
    delivery.error = error
    return parkAnswer(engine, body, delivery, error, event)
  }
  throw error
}

/** Parks the event; 200 `parked` once a durable store holds it, 200 `duplicate` when it holds it replayed. */
async function parkAnswer(
  engine: Engine,
  body: RawBody,
  delivery: IncomingDelivery,
  error: SchemaError | HandlerError | QuarantinedError,
  event: VerifiedEvent | undefined,
): Promise<WebhookResult> {
  const { result, outcome } = await park(
    engine,
    { body, getHeader: delivery.raw.getHeader },
    error,
    event,
    delivery.scope,
  )
  delivery.outcome = outcome
  if (outcome === 'duplicate') delivery.error = undefined
  return result
}
