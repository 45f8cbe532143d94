import { errorAnswer, inProgress, ok } from './answers.js'
import { checkDeadLetterStore, deadLetterView, onLastTries, type ParkState, park } from './dead-letters/index.js'
import { Deadlines, type Pending } from './deadline.js'
import {
  Claims,
  dispatchInSlot,
  dispatchInSlotPromise,
  observeDispatch,
  releaseClaim,
  type SlotAttempt,
  type SlotState,
  Slots,
} from './dispatch/index.js'
import {
  BodyTimeoutError,
  ClosingError,
  DeadlineError,
  HandlerError,
  InternalError,
  SchemaError,
  StaleEventError,
  StoreError,
  WebhookError,
} from './errors.js'
import { createEventHandler, logVerifiedWith, on, onAny, onError, report } from './event-handler/index.js'
import { createLog } from './log.js'
import { eventSchemas, type SchemaMap } from './schemas.js'
import { checkSecrets, type VerifiedSecret } from './secrets.js'
import { ANSWER_LIMIT_MS, RETRY_WINDOW_MS } from './service-contract.js'
import { cryptoProvider, type RawBody } from './signature.js'
import { doctorBudget } from './signature-doctor/index.js'
import { staleAnswer } from './stale.js'
import { DEFAULT_RETENTION_MS, memoryStore, type WebhookStore } from './store.js'
import type { TelemetryScope } from './telemetry.js'
import { isThenable } from './thenable.js'
import type {
  CloseOptions,
  DispatchOutcome,
  EventMap,
  Handler,
  QueuedEvent,
  RawDelivery,
  WebhookQueue,
  WebhookResult,
  Webhooks,
  WebhooksOptions,
} from './types.js'
import { check, inRange, nonNegativeNumber, positiveInteger } from './validations.js'
import { type Verified, type VerifyState, verifyAndParse } from './verify-and-parse.js'
import { warnAtStart, warnUnknownType, watchSecrets } from './warnings.js'
import { receiveWebRequest } from './web.js'

/** One receiver's state, shared by verify-and-parse, dispatch, the deadline and `close`. */
interface Engine extends VerifyState, SlotState, ParkState {
  readonly queue: WebhookQueue | undefined
  readonly deadlineMs: number
  /** Set by `close`: its promise. */
  closing: Promise<void> | undefined
  /** Deliveries gone asynchronous, waiting for their deadline. */
  readonly deadlines: Deadlines<Delivery>
}

/**
 * A delivery under way: whether it was answered (the deadline may come first), the event once parsed, and for
 * telemetry how it ended: `outcome` when it succeeded, `error` when it failed (or was parked).
 */
interface Delivery extends SlotAttempt, Pending {
  readonly raw: RawDelivery
  /** Answers the caller; set once the delivery went asynchronous. */
  resolve: ((result: WebhookResult) => void) | undefined
  event: QueuedEvent | undefined
  /** True while the body is still arriving. */
  reading: boolean
  /** True once the deadline passed during the read: the delivery is over, whenever the read settles. */
  timedOut: boolean
  outcome: 'processed' | 'duplicate' | 'queued' | 'parked' | 'in_progress' | undefined
  error: WebhookError | undefined
  /** Set once a secret verified the body. */
  verifiedWith: VerifiedSecret | undefined
}

const ignore = () => {}

function reject(engine: Engine, error: WebhookError): WebhookResult {
  report(engine.eventHandler, error)
  return errorAnswer(error)
}

/** Records a parked event's answer: 200 once a durable store holds it. */
function parked(delivery: Delivery, result: WebhookResult): WebhookResult {
  if (result.status === 200) delivery.outcome = 'parked'
  return result
}

/** An answer refused before any work (closing, or an adapter's `reject`): its own telemetry scope, when observed. */
function refuse(engine: Engine, error: WebhookError): WebhookResult {
  engine.eventHandler.telemetry?.receive()?.end({ outcome: error.code, status: error.status, error })
  return reject(engine, error)
}

/** Ends the delivery's telemetry scope with its answer, once its work settled before the deadline. */
function observed(scope: TelemetryScope, delivery: Delivery, status: number) {
  scope.end({ outcome: delivery.outcome ?? delivery.error?.code ?? 'internal_error', status, error: delivery.error })
}

/**
 * Verifies, parses and handles the delivery once its bytes are in: synchronously while everything it waits on
 * answers synchronously (`node:crypto` with static secrets, the memory store, handlers returning no promise), so
 * such a delivery makes no promise, timer or closure of its own; the first promise switches to the asynchronous
 * path. May throw synchronously.
 */
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
  const scope = delivery.scope
  if (verified instanceof WebhookError) {
    delivery.error = verified
    if (verified instanceof StaleEventError) return answerStale(engine, body, delivery, verified)
    return engine.deadLetters && verified instanceof SchemaError
      ? parkAnswer(engine, body, delivery, verified, undefined)
      : reject(engine, verified)
  }
  const event = verified
  delivery.event = event
  const verifiedWith = delivery.verifiedWith
  scope?.event(event, verifiedWith)
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

function answerOutcome(delivery: Delivery, event: QueuedEvent, outcome: DispatchOutcome): WebhookResult {
  delivery.outcome = outcome.status
  if (outcome.status !== 'in_progress') return ok(event.event_id, outcome.status)
  return inProgress(event.event_id, outcome.retryAfterMs)
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

async function parkAnswer(
  engine: Engine,
  body: RawBody,
  delivery: Delivery,
  error: SchemaError | HandlerError,
  event: QueuedEvent | undefined,
): Promise<WebhookResult> {
  const received = { body, getHeader: delivery.raw.getHeader }
  return parked(delivery, await park(engine, received, error, event, delivery.scope))
}

/** Ends the delivery: telemetry, and the receiver's count of running work. */
function settled(engine: Engine, delivery: Delivery, result: WebhookResult): WebhookResult {
  engine.claims.finish()
  if (delivery.scope) observed(delivery.scope, delivery, result.status)
  delivery.answered = true
  return result
}

/** The answer for a delivery whose processing threw (or rejected). */
function failed(engine: Engine, delivery: Delivery, error: unknown): WebhookResult {
  delivery.error = error instanceof WebhookError ? error : new InternalError(error, delivery.event)
  return reject(engine, delivery.error)
}

/**
 * Answers `raw` when its processing finishes or at the deadline, whichever comes first. The deadline counts from
 * the request's arrival, so it covers a body still arriving too. A delivery processed synchronously is answered
 * at once, without entering the deadline list.
 */
function receive(engine: Engine, raw: RawDelivery): Promise<WebhookResult> {
  if (engine.closing) {
    const body = raw.body
    if (isThenable(body)) {
      raw.stopReading?.()
      body.then(undefined, ignore)
    }
    return Promise.resolve(refuse(engine, new ClosingError()))
  }
  const arrivedAt = Date.now()
  const delivery: Delivery = {
    answered: false,
    scope: engine.eventHandler.telemetry?.receive(),
    digest: undefined,
    waiting: undefined,
    event: undefined,
    reading: false,
    timedOut: false,
    outcome: undefined,
    error: undefined,
    verifiedWith: undefined,
    raw,
    resolve: undefined,
    due: 0,
    prev: undefined,
    next: undefined,
    linked: false,
  }
  engine.claims.start()
  const body = raw.body
  if (isThenable(body)) {
    delivery.reading = true
    return waitFor(engine, delivery, arrivedAt, body, bodyArrived)
  }
  const result = processBody(engine, delivery, body)
  if (!isThenable(result)) return Promise.resolve(settled(engine, delivery, result))
  return waitFor(engine, delivery, arrivedAt, result, settle)
}

/** {@link afterBody}, with a synchronous throw turned into its answer. */
function processBody(engine: Engine, delivery: Delivery, body: RawBody): WebhookResult | Promise<WebhookResult> {
  try {
    return afterBody(engine, delivery, body)
  } catch (error) {
    return failed(engine, delivery, error)
  }
}

/** Processing failed (or a body read broke): answer it, unless the deadline ended the delivery during the read. */
function settleFailure(engine: Engine, delivery: Delivery, error: unknown): void {
  if (!delivery.timedOut) settle(engine, delivery, failed(engine, delivery, error))
}

/** The delivery went asynchronous: its answer comes from `next` once `work` settles, or from the deadline. */
function waitFor<T>(
  engine: Engine,
  delivery: Delivery,
  arrivedAt: number,
  work: PromiseLike<T>,
  next: (engine: Engine, delivery: Delivery, value: T) => void,
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

/** The body arrived: go on with it, unless the deadline answered while it was arriving. */
function bodyArrived(engine: Engine, delivery: Delivery, body: RawBody): void {
  delivery.reading = false
  if (delivery.timedOut) return
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

/** Processing finished, before or after the deadline. */
function settle(engine: Engine, delivery: Delivery, result: WebhookResult): void {
  if (delivery.timedOut) return
  if (delivery.answered) {
    engine.claims.finish()
    return
  }
  engine.deadlines.remove(delivery)
  delivery.resolve?.(settled(engine, delivery, result))
}

/** The deadline passed before the delivery's processing finished: answer now; the work may go on. */
function expire(engine: Engine, delivery: Delivery): void {
  // Still waiting for a slot: withdrawn, nothing claimed or run, and answered 503 `busy` by the dispatch's rejection.
  if (delivery.waiting?.withdraw()) return
  delivery.answered = true
  const scope = delivery.scope
  const resolve = delivery.resolve as (result: WebhookResult) => void
  if (delivery.reading) {
    // Nothing of this delivery runs after this: count it out now, even if the read never settles.
    delivery.timedOut = true
    engine.claims.finish()
    delivery.raw.stopReading?.()
    const error = new BodyTimeoutError(engine.deadlineMs)
    scope?.end({ outcome: error.code, status: error.status, error })
    resolve(reject(engine, error))
    return
  }
  const event = delivery.event
  const error = new DeadlineError(engine.deadlineMs, event?.event_id, event?.event_type)
  // The delivery's span ends with its answer; the work's own spans end when it does.
  scope?.end({ outcome: error.code, status: error.status, error })
  resolve(reject(engine, error))
}

/**
 * Waits for running work, at most `timeoutMs`; then aborts the signals of handlers still running and releases
 * their claims, so the service's retry runs those events; then shuts the store down.
 */
async function shutDown(engine: Engine, timeoutMs: number): Promise<void> {
  await engine.claims.idle(timeoutMs)
  engine.slots?.stop(new ClosingError())
  await engine.claims.cancelAll(new ClosingError(), (run) => releaseClaim(engine, run))
  try {
    await engine.store.shutdown?.()
  } catch (cause) {
    report(engine.eventHandler, new StoreError('shutdown', cause))
  }
  try {
    await engine.deadLetters?.shutdown?.()
  } catch (cause) {
    report(engine.eventHandler, new StoreError('dead-letter shutdown', cause))
  }
  engine.deadlines.stop()
}

/**
 * Creates a webhook receiver for the payment service. Handlers get the event and a context: `signal`, plus
 * what the store adds (`db` with `@payhooks/postgres`), typed from the `store` option.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: memoryStore() })
 * webhooks.on('transaction_settled', async (event) => {
 *   console.log(event.event_id, event.data.settlement_amount)
 * })
 * // Any fetch-style runtime:
 * export default { fetch: (req: Request) => webhooks.handle(req) }
 */
export function createWebhooks<S extends SchemaMap = {}, C extends object = {}>(
  options: WebhooksOptions<S, C>,
): Webhooks<EventMap<S>, C> {
  const where = 'createWebhooks'
  const deadlineMs = inRange(
    options.deadlineMs ?? 5000,
    where,
    'deadlineMs',
    { above: 0, below: ANSWER_LIMIT_MS },
    'the service waits 10 s',
  )
  const maxBodyBytes = options.maxBodyBytes ?? 1_048_576
  check(maxBodyBytes > 0, where, 'maxBodyBytes', 'be positive')
  const leaseMs = options.leaseMs ?? 900_000
  check(leaseMs > deadlineMs, where, 'leaseMs', 'be longer than deadlineMs')
  const secretOption = options.secret
  const logger = options.logger
  const store: WebhookStore<object> = options.store ?? memoryStore({ logger })
  const maxEventAgeMs = inRange(
    options.maxEventAgeMs ?? store.retentionMs ?? DEFAULT_RETENTION_MS,
    where,
    'maxEventAgeMs',
    { min: RETRY_WINDOW_MS },
    'the service retries for 72 hours',
  )
  const maxClockSkewMs = inRange(options.maxClockSkewMs ?? 300_000, where, 'maxClockSkewMs', { min: 0 })
  const maxConcurrentEvents = options.maxConcurrentEvents ?? store.maxConcurrentEvents ?? Number.POSITIVE_INFINITY
  if (maxConcurrentEvents !== Number.POSITIVE_INFINITY)
    positiveInteger(maxConcurrentEvents, where, 'maxConcurrentEvents')
  const eventHandler = createEventHandler(createLog(logger), options.telemetry)
  const secrets = typeof secretOption === 'function' ? undefined : checkSecrets(secretOption)
  const engine: Engine = {
    maxBodyBytes,
    secrets,
    secretOption,
    schemas: { ...eventSchemas, ...options.schemas },
    maxEventAgeMs,
    maxClockSkewMs,
    onResolvedSecrets: secrets ? undefined : watchSecrets(eventHandler),
    doctor: doctorBudget(),
    store,
    leaseMs,
    eventHandler,
    slots: maxConcurrentEvents === Number.POSITIVE_INFINITY ? undefined : new Slots(maxConcurrentEvents),
    storeReady: undefined,
    initialized: !store.init,
    queue: options.queue,
    deadLetters: options.deadLetters && checkDeadLetterStore(options.deadLetters),
    deadLettersReady: undefined,
    deadlineMs,
    closing: undefined,
    claims: new Claims(),
    deadlines: new Deadlines((delivery) => expire(engine, delivery)),
  }
  warnAtStart(eventHandler, { store, queue: options.queue, secrets: secrets?.secrets, leaseMs, maxEventAgeMs })
  const warnedTypes = new Set<string>()
  const deadLetters = deadLetterView(engine, (work) =>
    engine.closing ? Promise.reject(new ClosingError()) : engine.claims.track(work),
  )

  const webhooks: Webhooks<EventMap<S>, C> = {
    on(type, handler) {
      warnUnknownType(eventHandler, engine.schemas, type, warnedTypes)
      on(engine.eventHandler, type, handler as Handler<never, never>)
      return this
    },
    onAny(handler) {
      onAny(engine.eventHandler, handler as Handler<never, never>)
      return this
    },
    onError(listener) {
      onError(engine.eventHandler, listener)
      return this
    },
    receive: (raw) => receive(engine, raw),
    handle: (request) => receiveWebRequest(webhooks, request),
    dispatch(event, dispatchOptions) {
      if (engine.closing) return Promise.reject(new ClosingError())
      const scope = eventHandler.telemetry?.dispatch(event, { source: 'queue', trace: dispatchOptions?.trace })
      const outcome = engine.claims.track(() => dispatchInSlotPromise(engine, event, { answered: true, scope }))
      if (scope) observeDispatch(scope, outcome, event)
      return outcome
    },
    deadLetters,
    replay: deadLetters.replay,
    replayAll: deadLetters.replayAll,
    report: (error) => report(engine.eventHandler, error),
    reject: (error) => refuse(engine, error),
    close(closeOptions: CloseOptions = {}) {
      if (engine.closing) return engine.closing
      try {
        const timeoutMs = nonNegativeNumber(closeOptions.timeoutMs ?? 10_000, 'close', 'timeoutMs')
        engine.closing = shutDown(engine, timeoutMs)
      } catch (error) {
        return Promise.reject(error)
      }
      return engine.closing
    },
    maxBodyBytes,
    deadlineMs,
  }
  options.queue?.attach?.(webhooks as Webhooks<unknown>)
  return webhooks
}
