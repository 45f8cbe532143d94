import { BodyTimeoutError, ClosingError, DeadlineError, InternalError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import { arrivalTime } from '../http/proxy-arrival.js'
import { isUnsigned, missingSignature } from '../refusals/unsigned.js'
import type { RawDelivery, WebhookResult } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { RawBody } from '../verify/signature.js'
import { expiredAnswer, refusedAnswer, settledAnswer } from './answer.js'
import { IncomingDelivery } from './delivery.js'
import type { Engine } from './engine.js'
import { failedAnswer, processBody } from './pipeline.js'

const ignore = () => {}

/**
 * Answers `raw` when its processing finishes or at the deadline, whichever comes first. The deadline counts from
 * the request's arrival (at the proxy, with `proxyArrival`), so it covers a body still arriving too. A delivery processed synchronously is answered
 * at once, without entering the deadline list.
 */
export function receive(engine: Engine, raw: RawDelivery): Promise<WebhookResult> {
  return new Promise((resolve) => {
    const now = start(engine, raw, resolve)
    if (now !== undefined) resolve(now)
  })
}

/**
 * {@link receive} with the answer handed to `send` instead of a promise: at once when the delivery is answered
 * synchronously, else from the callback that settles it (or from the deadline). `send` is called exactly once; if
 * it throws, that is reported to `onError` as an {@link InternalError} and goes no further.
 */
export function respond(engine: Engine, raw: RawDelivery, send: (result: WebhookResult) => void): void {
  const answer = (result: WebhookResult) => {
    try {
      send(result)
    } catch (error) {
      report(engine.eventHandler, new InternalError(error))
    }
  }
  const now = start(engine, raw, answer)
  if (now !== undefined) answer(now)
}

/**
 * Starts a delivery: its answer when known at once (refused while closing, or processed synchronously), else
 * `undefined`, and `answer` gets it later.
 */
function start(engine: Engine, raw: RawDelivery, answer: (result: WebhookResult) => void): WebhookResult | undefined {
  if (engine.closing) {
    const body = raw.body
    if (isThenable(body)) {
      stopReading(engine, raw)
      body.then(undefined, ignore)
    }
    return refusedAnswer(engine, new ClosingError())
  }
  const now = Date.now()
  const body = raw.body
  const reading = isThenable(body)
  if (reading && isUnsigned(raw.method, raw.getHeader)) {
    // Nothing it sends can be verified: refused without waiting for the body (`connection: close` drops the rest).
    stopReading(engine, raw)
    body.then(undefined, ignore)
    return refusedAnswer(engine, missingSignature(), raw.remoteAddress)
  }
  const arrivedAt = engine.proxyArrival
    ? arrivalTime(engine.proxyArrival, raw.getHeader, now, engine.eventHandler)
    : now
  if (arrivedAt + engine.deadlineMs <= now) {
    // A proxy held the request (buffering its body) past the deadline: too late to run anything.
    if (reading) {
      stopReading(engine, raw)
      body.then(undefined, ignore)
    }
    return refusedAnswer(engine, new BodyTimeoutError(engine.deadlineMs))
  }
  const delivery = new IncomingDelivery(
    raw,
    engine.eventHandler.telemetry?.receive(),
    reading ? 'reading' : 'processing',
  )
  // Set before processing, so a dispatch that must wait for a slot knows how much time it has left.
  delivery.due = arrivedAt + engine.deadlineMs
  engine.claims.start()
  if (reading) {
    waitFor(engine, delivery, arrivedAt, answer, body, bodyArrived)
    return undefined
  }
  const result = processBody(engine, delivery, body)
  if (!isThenable(result)) return settledAnswer(engine, delivery, result)
  waitFor(engine, delivery, arrivedAt, answer, result, settle)
  return undefined
}

/** Stops the read of `raw`'s body: an adapter's `stopReading` that throws is reported, and the answer still goes out. */
function stopReading(engine: Engine, raw: RawDelivery): void {
  try {
    raw.stopReading?.()
  } catch (error) {
    report(engine.eventHandler, new InternalError(error))
  }
}

/** The delivery went asynchronous: its answer comes from `next` once `work` settles, or from the deadline. */
function waitFor<T>(
  engine: Engine,
  delivery: IncomingDelivery,
  arrivedAt: number,
  answer: (result: WebhookResult) => void,
  work: PromiseLike<T>,
  next: (engine: Engine, delivery: IncomingDelivery, value: T) => void,
): void {
  delivery.resolve = answer
  delivery.due = arrivedAt + engine.deadlineMs
  engine.deadlines.add(delivery)
  work.then(
    (value) => next(engine, delivery, value),
    (error: unknown) => settleFailure(engine, delivery, error),
  )
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
    // Answered at the deadline: the journal says how its work ended (`processed_late`: handled after all).
    engine.journal?.late(delivery, delivery.due - engine.deadlineMs)
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
    stopReading(engine, delivery.raw)
    expiredAnswer(engine, delivery, new BodyTimeoutError(engine.deadlineMs))
    return
  }
  delivery.phase = 'expired'
  const event = delivery.event
  expiredAnswer(engine, delivery, new DeadlineError(engine.deadlineMs, event?.event_id, event?.event_type))
}
