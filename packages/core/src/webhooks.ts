import { errorAnswer, inProgress, ok } from './answers.js'
import { checkDeadLetterStore, deadLetterView, onLastTries, type ParkState, park } from './dead-letters/index.js'
import { type Attempt, type DispatchState, dispatch, releaseClaim } from './dispatch.js'
import {
  BodyTimeoutError,
  ClosingError,
  DeadlineError,
  HandlerError,
  InternalError,
  SchemaError,
  StoreError,
  WebhookError,
} from './errors.js'
import { createEventHandler, on, onAny, onError, report, warn } from './event-handler/index.js'
import { eventSchemas, type SchemaMap } from './schemas.js'
import type { RawBody } from './signature.js'
import { DEFAULT_RETENTION_MS, memoryStore, type WebhookStore } from './store.js'
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
import { check, inRange, nonNegativeNumber } from './validations.js'
import { checkSecrets, type VerifyState, verifyAndParse } from './verify-and-parse.js'
import { receiveWebRequest } from './web.js'

/** One receiver's state, shared by verify-and-parse, dispatch, the deadline and `close`. */
interface Engine extends VerifyState, DispatchState, ParkState {
  readonly queue: WebhookQueue | undefined
  readonly deadlineMs: number
  /** Deliveries and dispatches not finished yet (handlers included, even past the deadline). */
  running: number
  /** Set by `close`: its promise. */
  closing: Promise<void> | undefined
  /** Called by the last running delivery once `close` waits for them. */
  idle: (() => void) | undefined
}

/** A delivery under way: whether it was answered (the deadline may come first) and the event, once parsed. */
interface Delivery extends Attempt {
  event: QueuedEvent | undefined
  /** True while the body is still arriving. */
  reading: boolean
  /** True once the deadline passed during the read: the delivery is over, whenever the read settles. */
  timedOut: boolean
}

/** What `processDelivery` resolves with once the deadline answered first: never sent. */
const UNSENT: WebhookResult = { status: 0, headers: {}, body: '' }
const ignore = () => {}

/** The service retries for 72 hours: an age limit below it would refuse genuine retries. */
const RETRY_WINDOW_MS = 72 * 60 * 60 * 1000

function reject(engine: Engine, error: WebhookError): WebhookResult {
  report(engine.eventHandler, error)
  return errorAnswer(error)
}

function finished(engine: Engine): void {
  if (--engine.running === 0 && engine.idle) {
    engine.idle()
    engine.idle = undefined
  }
}

async function processDelivery(engine: Engine, raw: RawDelivery, delivery: Delivery): Promise<WebhookResult> {
  let body = raw.body
  if (isThenable(body)) {
    delivery.reading = true
    try {
      body = await body
    } catch (error) {
      if (delivery.answered) return UNSENT // the read was stopped (or broke) after the deadline answered
      throw error
    }
    delivery.reading = false
    if (delivery.answered) return UNSENT
  }
  let verified = verifyAndParse(engine, raw, body as RawBody)
  if (verified instanceof Promise) verified = await verified
  if (verified instanceof WebhookError) {
    return engine.deadLetters && verified instanceof SchemaError
      ? park(engine, { body: body as RawBody, getHeader: raw.getHeader }, verified)
      : reject(engine, verified)
  }
  const event = verified as QueuedEvent
  delivery.event = event
  if (engine.queue) {
    try {
      await engine.queue.enqueue(event)
    } catch (cause) {
      throw new StoreError('enqueue', cause, event.event_id, event.event_type)
    }
    return ok(event.event_id, 'queued')
  }
  let outcome: DispatchOutcome
  try {
    outcome = await dispatch(engine, event, delivery)
  } catch (error) {
    // Signed over 71 hours ago: the service's last tries, after which the event would be gone.
    if (engine.deadLetters && error instanceof HandlerError && onLastTries(event))
      return park(engine, { body: body as RawBody, getHeader: raw.getHeader }, error, event)
    throw error
  }
  if (outcome.status !== 'in_progress') return ok(event.event_id, outcome.status)
  return inProgress(event.event_id, outcome.retryAfterMs)
}

/**
 * Answers `raw` when its processing finishes or at the deadline, whichever comes first. The one timer counts from
 * the request's arrival, so it covers a body still arriving too.
 */
function receive(engine: Engine, raw: RawDelivery): Promise<WebhookResult> {
  if (engine.closing) {
    const body = raw.body
    if (isThenable(body)) {
      raw.stopReading?.()
      body.then(undefined, ignore)
    }
    return Promise.resolve(reject(engine, new ClosingError()))
  }
  const delivery: Delivery = { answered: false, event: undefined, reading: false, timedOut: false }
  engine.running++
  return new Promise((resolve) => {
    // Whatever the work is waiting on (the body, handlers, store, secret resolver), the answer goes out at the deadline.
    const timer = setTimeout(() => {
      delivery.answered = true
      if (delivery.reading) {
        // Nothing of this delivery runs after this: count it out now, even if the read never settles.
        delivery.timedOut = true
        finished(engine)
        raw.stopReading?.()
        resolve(reject(engine, new BodyTimeoutError(engine.deadlineMs)))
        return
      }
      const event = delivery.event
      resolve(reject(engine, new DeadlineError(engine.deadlineMs, event?.event_id, event?.event_type)))
    }, engine.deadlineMs)
    // Called once processing finishes, before or after the deadline.
    const settle = (result: WebhookResult) => {
      if (delivery.timedOut) return
      finished(engine)
      if (delivery.answered) return
      delivery.answered = true
      clearTimeout(timer)
      resolve(result)
    }
    processDelivery(engine, raw, delivery).then(settle, (error: unknown) => {
      if (delivery.timedOut) return
      settle(reject(engine, error instanceof WebhookError ? error : new InternalError(error, delivery.event)))
    })
  })
}

/**
 * Waits for running work, at most `timeoutMs`; then aborts the signals of handlers still running and releases
 * their claims, so the service's retry runs those events; then shuts the store down.
 */
async function shutDown(engine: Engine, timeoutMs: number): Promise<void> {
  if (engine.running > 0) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs)
      engine.idle = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  }
  engine.stopped = true
  if (engine.runs.size > 0) {
    const runs = [...engine.runs]
    const reason = new ClosingError()
    for (const run of runs) run.controller.abort(reason)
    await Promise.all(runs.map((run) => releaseClaim(engine, run)))
  }
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
}

/** Stores already warned about lacking `extend`, so a store shared by several receivers warns once. */
const warnedStores = new WeakSet<object>()

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
    { above: 0, below: 10_000 },
    'the service waits 10 s',
  )
  const maxBodyBytes = options.maxBodyBytes ?? 1_048_576
  check(maxBodyBytes > 0, where, 'maxBodyBytes', 'be positive')
  const leaseMs = options.leaseMs ?? 900_000
  check(leaseMs > deadlineMs, where, 'leaseMs', 'be longer than deadlineMs')
  const maxEventAgeMs = inRange(
    options.maxEventAgeMs ?? DEFAULT_RETENTION_MS,
    where,
    'maxEventAgeMs',
    { min: RETRY_WINDOW_MS },
    'the service retries for 72 hours',
  )
  const maxClockSkewMs = inRange(options.maxClockSkewMs ?? 300_000, where, 'maxClockSkewMs', { min: 0 })
  const secretOption = options.secret
  const logger = options.logger ?? console
  const store: WebhookStore<object> = options.store ?? memoryStore({ logger })
  const engine: Engine = {
    maxBodyBytes,
    secrets: typeof secretOption === 'function' ? undefined : checkSecrets(secretOption),
    secretOption,
    schemas: { ...eventSchemas, ...options.schemas },
    maxEventAgeMs,
    maxClockSkewMs,
    store,
    leaseMs,
    eventHandler: createEventHandler(logger),
    storeReady: undefined,
    initialized: !store.init,
    queue: options.queue,
    deadLetters: options.deadLetters && checkDeadLetterStore(options.deadLetters),
    deadLettersReady: undefined,
    deadlineMs,
    running: 0,
    closing: undefined,
    idle: undefined,
    runs: new Set(),
    stopped: false,
  }
  if (!store.extend && !warnedStores.has(store)) {
    warnedStores.add(store)
    warn(
      engine.eventHandler,
      `the store has no extend(): claims cannot be renewed, so handlers running longer than leaseMs (${leaseMs} ms) may run twice. Add extend() to the store (see "Writing a store").`,
    )
  }
  const dispatched = () => finished(engine)
  const deadLetters = deadLetterView(engine, (work) => {
    if (engine.closing) return Promise.reject(new ClosingError())
    engine.running++
    const result = work()
    result.then(dispatched, dispatched)
    return result
  })

  const webhooks: Webhooks<EventMap<S>, C> = {
    on(type, handler) {
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
    dispatch(event) {
      if (engine.closing) return Promise.reject(new ClosingError())
      engine.running++
      const outcome = dispatch(engine, event, { answered: true })
      outcome.then(dispatched, dispatched)
      return outcome
    },
    deadLetters,
    replay: deadLetters.replay,
    replayAll: deadLetters.replayAll,
    report: (error) => report(engine.eventHandler, error),
    reject: (error) => reject(engine, error),
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
