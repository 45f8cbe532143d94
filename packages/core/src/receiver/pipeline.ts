import { inProgress, ok } from '../answers.js'
import { onLastTries, park } from '../dead-letters/index.js'
import { dispatchInSlot } from '../dispatch/index.js'
import { HandlerError, InternalError, SchemaError, StaleEventError, StoreError, WebhookError } from '../errors.js'
import { logVerifiedWith } from '../event-handler/index.js'
import { cryptoProvider, type RawBody } from '../signature.js'
import { staleAnswer } from '../stale.js'
import { isThenable } from '../thenable.js'
import type { DispatchOutcome, QueuedEvent, WebhookQueue, WebhookResult } from '../types.js'
import { type Verified, verifyAndParse } from '../verify-and-parse.js'
import { reportedAnswer } from './answer.js'
import type { Delivery } from './delivery.js'
import type { Engine } from './engine.js'

// After the body: verify → stale? → queue or dispatch → the answer (or park). Synchronous while everything it
// waits on answers synchronously (`node:crypto` with static secrets, the memory store, handlers returning no
// promise), so such a delivery makes no promise, timer or closure of its own; the first promise switches to the
// asynchronous path.

/** The delivery's answer once its bytes are in; a failure (thrown or rejected) is answered too. */
export function processBody(engine: Engine, delivery: Delivery, body: RawBody): WebhookResult | Promise<WebhookResult> {
  try {
    return afterBody(engine, delivery, body)
  } catch (error) {
    return failedAnswer(engine, delivery, error)
  }
}

/** The answer for a delivery whose processing threw (or rejected). */
export function failedAnswer(engine: Engine, delivery: Delivery, error: unknown): WebhookResult {
  delivery.error = error instanceof WebhookError ? error : new InternalError(error, delivery.event)
  return reportedAnswer(engine, delivery.error)
}

function afterBody(engine: Engine, delivery: Delivery, body: RawBody): WebhookResult | Promise<WebhookResult> {
  const verified = verifyAndParse(engine, delivery.raw, body, delivery)
  if (verified instanceof Promise) return verified.then((v) => afterVerify(engine, delivery, body, v))
  return afterVerify(engine, delivery, body, verified as Verified)
}

function afterVerify(
  engine: Engine,
  delivery: Delivery,
  body: RawBody,
  verified: Verified,
): WebhookResult | Promise<WebhookResult> {
  if (verified instanceof WebhookError) {
    delivery.error = verified
    if (verified instanceof StaleEventError) return answerStale(engine, body, delivery, verified)
    return engine.deadLetters && verified instanceof SchemaError
      ? parkAnswer(engine, body, delivery, verified, undefined)
      : reportedAnswer(engine, verified)
  }
  const event = verified
  delivery.event = event
  const verifiedWith = delivery.verifiedWith
  delivery.scope?.event(event, verifiedWith)
  if (verifiedWith && verifiedWith.index > 0) logVerifiedWith(engine.eventHandler, event, verifiedWith)
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
  delivery: Delivery,
  body: RawBody,
  event: QueuedEvent,
): WebhookResult | Promise<WebhookResult> {
  let outcome: DispatchOutcome | Promise<DispatchOutcome>
  try {
    outcome = dispatchInSlot(engine, event, delivery)
  } catch (error) {
    return dispatchFailed(engine, body, delivery, event, error)
  }
  if (isThenable(outcome)) {
    return outcome.then(
      (done) => answerOutcome(delivery, event, done),
      (error: unknown) => dispatchFailed(engine, body, delivery, event, error),
    )
  }
  return answerOutcome(delivery, event, outcome)
}

function answerOutcome(delivery: Delivery, event: QueuedEvent, outcome: DispatchOutcome): WebhookResult {
  delivery.outcome = outcome.status
  if (outcome.status !== 'in_progress') return ok(event.event_id, outcome.status)
  return inProgress(event.event_id, outcome.retryAfterMs)
}

/** An old event: a duplicate when the store knows it as handled, else parked or refused (never run, never lost). */
async function answerStale(
  engine: Engine,
  body: RawBody,
  delivery: Delivery,
  error: StaleEventError,
): Promise<WebhookResult> {
  delivery.event = error.event
  delivery.scope?.event(error.event)
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

async function enqueue(queue: WebhookQueue, event: QueuedEvent, delivery: Delivery): Promise<WebhookResult> {
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

/** A handler failure on an event signed over 71 hours ago (the service's last tries) is parked; the rest rethrown. */
function dispatchFailed(
  engine: Engine,
  body: RawBody,
  delivery: Delivery,
  event: QueuedEvent,
  error: unknown,
): Promise<WebhookResult> {
  if (engine.deadLetters && error instanceof HandlerError && onLastTries(event)) {
    delivery.error = error
    return parkAnswer(engine, body, delivery, error, event)
  }
  throw error
}

/** Parks the event; 200 `parked` once a durable store holds it. */
async function parkAnswer(
  engine: Engine,
  body: RawBody,
  delivery: Delivery,
  error: SchemaError | HandlerError,
  event: QueuedEvent | undefined,
): Promise<WebhookResult> {
  const result = await park(engine, { body, getHeader: delivery.raw.getHeader }, error, event, delivery.scope)
  if (result.status === 200) delivery.outcome = 'parked'
  return result
}
