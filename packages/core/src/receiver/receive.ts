import { BodyTimeoutError, ClosingError, DeadlineError } from '../errors.js'
import type { RawBody } from '../signature.js'
import { isThenable } from '../thenable.js'
import type { RawDelivery, WebhookResult } from '../types.js'
import { expiredAnswer, refusedAnswer, settledAnswer } from './answer.js'
import { IncomingDelivery } from './delivery.js'
import type { Engine } from './engine.js'
import { failedAnswer, processBody } from './pipeline.js'

const ignore = () => {}

/**
 * Answers `raw` when its processing finishes or at the deadline, whichever comes first. The deadline counts from
 * the request's arrival, so it covers a body still arriving too. A delivery processed synchronously is answered
 * at once, without entering the deadline list.
 */
export function receive(engine: Engine, raw: RawDelivery): Promise<WebhookResult> {
  if (engine.closing) {
    const body = raw.body
    if (isThenable(body)) {
      raw.stopReading?.()
      body.then(undefined, ignore)
    }
    return Promise.resolve(refusedAnswer(engine, new ClosingError()))
  }
  const arrivedAt = Date.now()
  const body = raw.body
  const reading = isThenable(body)
  const delivery = new IncomingDelivery(
    raw,
    engine.eventHandler.telemetry?.receive(),
    reading ? 'reading' : 'processing',
  )
  engine.claims.start()
  if (reading) return waitFor(engine, delivery, arrivedAt, body, bodyArrived)
  const result = processBody(engine, delivery, body)
  if (!isThenable(result)) return Promise.resolve(settledAnswer(engine, delivery, result))
  return waitFor(engine, delivery, arrivedAt, result, settle)
}

/** The delivery went asynchronous: its answer comes from `next` once `work` settles, or from the deadline. */
function waitFor<T>(
  engine: Engine,
  delivery: IncomingDelivery,
  arrivedAt: number,
  work: PromiseLike<T>,
  next: (engine: Engine, delivery: IncomingDelivery, value: T) => void,
): Promise<WebhookResult> {
  return new Promise((resolve) => {
    delivery.resolve = resolve
    delivery.due = arrivedAt + engine.deadlineMs
    engine.deadlines.add(delivery)
    work.then(
      (value) => next(engine, delivery, value),
      (error: unknown) => settleFailure(engine, delivery, error),
    )
  })
}

/** `reading` → `processing`: the body arrived; unless the deadline answered while it was arriving. */
function bodyArrived(engine: Engine, delivery: IncomingDelivery, body: RawBody): void {
  if (delivery.phase === 'timed_out') return
  delivery.phase = 'processing'
  const result = processBody(engine, delivery, body)
  if (!isThenable(result)) {
    settle(engine, delivery, result)
    return
  }
  result.then(
    (answer) => settle(engine, delivery, answer),
    (error: unknown) => settleFailure(engine, delivery, error),
  )
}

/** Processing failed (or a body read broke): answer it, unless the deadline ended the delivery during the read. */
function settleFailure(engine: Engine, delivery: IncomingDelivery, error: unknown): void {
  if (delivery.phase !== 'timed_out') settle(engine, delivery, failedAnswer(engine, delivery, error))
}

/** `processing` → `answered`; or, once `expired`, the work settled after its answer: counted out. */
function settle(engine: Engine, delivery: IncomingDelivery, result: WebhookResult): void {
  const phase = delivery.phase
  if (phase === 'timed_out') return
  if (phase === 'expired') {
    engine.claims.finish()
    return
  }
  engine.deadlines.remove(delivery)
  delivery.resolve?.(settledAnswer(engine, delivery, result))
}

/** The deadline passed before the delivery's processing finished: answer now; the work may go on. */
export function expire(engine: Engine, delivery: IncomingDelivery): void {
  // Still waiting for a slot: withdrawn, nothing claimed or run, and answered 503 `busy` by the dispatch's rejection.
  if (delivery.waiting?.withdraw()) return
  if (delivery.phase === 'reading') {
    // Nothing of this delivery runs after this: count it out now, even if the read never settles.
    delivery.phase = 'timed_out'
    engine.claims.finish()
    delivery.raw.stopReading?.()
    expiredAnswer(engine, delivery, new BodyTimeoutError(engine.deadlineMs))
    return
  }
  delivery.phase = 'expired'
  const event = delivery.event
  expiredAnswer(engine, delivery, new DeadlineError(engine.deadlineMs, event?.event_id, event?.event_type))
}
