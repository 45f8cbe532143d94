import * as v from 'valibot'
import {
  DeadlineError,
  HandlerError,
  InternalError,
  MethodNotAllowedError,
  PayloadError,
  PayloadTooLargeError,
  SchemaError,
  type SchemaIssue,
  SignatureError,
  StoreError,
  WebhookError,
} from './errors.js'
import { type BuiltInSchemas, type EventsOf, eventSchemas, type SchemaMap, type UnknownEvent } from './schemas.js'
import { isSignatureShaped, matchSecret, type RawBody, SIGNATURE_HEADER } from './signature.js'
import { type ClaimResult, memoryStore, type WebhookStore } from './store.js'
import { readBody, toResponse } from './web.js'

/** Looks up a request header by lower-case name. */
export type HeaderLookup = (name: string) => string | null | undefined

/** One or several signature secrets, or a function that picks them per request. */
export type SecretOption =
  | string
  | readonly string[]
  | ((request: { getHeader: HeaderLookup }) => string | readonly string[] | Promise<string | readonly string[]>)

/** Options of {@link createWebhooks}. */
export interface WebhooksOptions<S extends SchemaMap = {}> {
  /**
   * The subscription's `signature_secret`. Several secrets are tried in turn (rotation, or several
   * subscriptions posting to one route); a function may pick them per request.
   */
  secret: SecretOption
  /**
   * Where handled `event_id`s are recorded.
   * @default memoryStore()
   */
  store?: WebhookStore
  /**
   * Schemas for further event types, or replacements for built-in ones, keyed by `event_type`.
   * Handlers for these types receive the schema's output type.
   */
  schemas?: S
  /**
   * Every request is answered within this many milliseconds, whatever the handlers do. The service
   * gives up after 10 s, so values of 10 000 or more are rejected.
   * @default 5000
   */
  deadlineMs?: number
  /**
   * Bodies larger than this are answered 413 unread.
   * @default 1_048_576 (1 MiB)
   */
  maxBodyBytes?: number
  /**
   * How long a claim protects an event being handled. A crashed process's claim expires after this,
   * so keep it below the service's one-hour retry interval. Handlers still running after it may
   * run again on the next retry: move work that long to the queue mode.
   * @default 900_000 (15 minutes)
   */
  leaseMs?: number
  /**
   * Queue mode: once verified and parsed, an event is handed to this queue and answered 200 at once;
   * a worker later runs the handlers through {@link Webhooks.dispatch}. Without it, handlers run
   * inline and the answer waits for them.
   */
  queue?: WebhookQueue
  /**
   * Where failures go when no `onError` listener is registered: one line each.
   * @default console
   */
  logger?: { error(message: string): void }
}

/** A verified event as it travels through a queue: the parsed message. */
export interface QueuedEvent {
  event_type: string
  event_id: string
  [field: string]: unknown
}

/**
 * Where queue mode puts verified events. `enqueue` resolves once the event is durably stored (or
 * already was: enqueueing the same `event_id` twice must not create two jobs) and rejects otherwise,
 * in which case the delivery is answered 503 and the service retries.
 */
export interface WebhookQueue {
  enqueue(event: QueuedEvent): Promise<void>
  /**
   * Called once by {@link createWebhooks} with the receiver, so an in-process queue can run
   * `receiver.dispatch` itself and report failures with `receiver.report`.
   */
  attach?(receiver: Pick<Webhooks<unknown>, 'dispatch' | 'report'>): void
}

/** What {@link Webhooks.dispatch} did with an event. */
export type DispatchOutcome =
  | { status: 'processed' | 'duplicate' }
  /** Another delivery or worker holds the claim; try again after `retryAfterMs`. */
  | { status: 'in_progress'; retryAfterMs?: number }

/** What the receiver answers: adapters write this out as the HTTP response. */
export interface WebhookResult {
  status: number
  headers: Record<string, string>
  body: string
}

/** A delivery as the transport received it: the exact body bytes and a header lookup. */
export interface RawDelivery {
  /** HTTP method; anything but POST is answered 405. Omit when the transport already routed on it. */
  method?: string
  /** The exact bytes received. Never re-serialized JSON. */
  body: RawBody
  getHeader: HeaderLookup
}

type Merge<S extends SchemaMap> = Omit<BuiltInSchemas, keyof S> & S
/** Typed events of a receiver, keyed by event type. */
export type EventMap<S extends SchemaMap = {}> = EventsOf<Merge<S>>
/** The event a handler of `T` receives: typed from its schema, or `data: unknown` for types without one. */
export type EventFor<E, T extends string> = T extends keyof E ? E[T] : UnknownEvent<T>
/** Any event a receiver can see. */
export type AnyEvent<E> = E[keyof E] | UnknownEvent

type Handler<Event> = (event: Event) => unknown
type ErrorListener = (error: WebhookError) => void

/** A webhook receiver built by {@link createWebhooks}. */
export interface Webhooks<E> {
  /**
   * Runs `handler` for every event of `type`. Handlers of one event run concurrently; the event is
   * acknowledged only once all of them succeed.
   *
   * @example
   * webhooks.on('transaction_settled', async (event) => {
   *   await ledger.credit(event.data.transaction_id, event.data.settlement_amount)
   * })
   */
  on<T extends (keyof E & string) | (string & {})>(type: T, handler: Handler<EventFor<E, T>>): this
  /** Runs `handler` for every event, whatever its type. */
  onAny(handler: Handler<AnyEvent<E>>): this
  /** Receives every failure as a typed {@link WebhookError}. Without one, failures are logged. */
  onError(listener: ErrorListener): this
  /**
   * Web-standard entry: verifies, dedupes and dispatches one delivery.
   *
   * @example
   * export default { fetch: (request: Request) => webhooks.handle(request) }
   */
  handle(request: Request): Promise<Response>
  /**
   * Lower-level entry for adapters: raw bytes and a header lookup in, status and JSON body out,
   * without building Request/Response objects.
   */
  receive(delivery: RawDelivery): Promise<WebhookResult>
  /**
   * Runs the handlers of an already verified event under the store's claim, as the inline mode does:
   * for queue workers. Resolves with what happened; rejects with {@link HandlerError} (claim released)
   * or {@link StoreError}. Errors are not reported to `onError`: the caller decides.
   */
  dispatch(event: QueuedEvent): Promise<DispatchOutcome>
  /** Reports `error` to the `onError` listeners, or logs it in one line when there are none. */
  report(error: WebhookError): void
  /** Reports `error` to `onError` (or the logger) and returns the answer for it, for transport-level failures. */
  reject(error: WebhookError): WebhookResult
  /** Effective options, for adapters. */
  readonly maxBodyBytes: number
  readonly deadlineMs: number
}

const CONTENT_TYPE = 'application/json'
const NO_ERRORS: unknown[] = []
const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function'
const decoder = new TextDecoder()
const RETRY_AFTER_SECONDS = '60'

function flattenIssues(issues: readonly v.BaseIssue<unknown>[]): SchemaIssue[] {
  return issues.map((issue) => ({
    path: issue.path?.map((item) => String(item.key)).join('.') ?? '',
    message: issue.message,
  }))
}

function ok(eventId: string, status: 'processed' | 'duplicate' | 'queued'): WebhookResult {
  return {
    status: 200,
    headers: { 'content-type': CONTENT_TYPE },
    body: `{"ok":true,"event_id":${JSON.stringify(eventId)},"status":"${status}"}`,
  }
}

/**
 * Whether `value` is a message with a non-empty string `event_id` and `event_type`: the same check as
 * `baseEnvelopeSchema`, without building a copy (it runs on every delivery). Queue workers use it on job data.
 */
export function isQueuedEvent(value: unknown): value is QueuedEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false
  const { event_id, event_type } = value as Record<string, unknown>
  return typeof event_id === 'string' && event_id !== '' && typeof event_type === 'string' && event_type !== ''
}

/**
 * Creates a webhook receiver for the payment service.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: memoryStore() })
 * webhooks.on('transaction_settled', async (event) => {
 *   console.log(event.event_id, event.data.settlement_amount)
 * })
 * // Any fetch-style runtime:
 * export default { fetch: (req: Request) => webhooks.handle(req) }
 */
export function createWebhooks<S extends SchemaMap = {}>(options: WebhooksOptions<S>): Webhooks<EventMap<S>> {
  const deadlineMs = options.deadlineMs ?? 5000
  const maxBodyBytes = options.maxBodyBytes ?? 1_048_576
  const leaseMs = options.leaseMs ?? 900_000
  if (!(deadlineMs > 0 && deadlineMs < 10_000)) {
    throw new RangeError('createWebhooks: deadlineMs must be above 0 and below 10000 (the service waits 10 s)')
  }
  if (!(maxBodyBytes > 0)) throw new RangeError('createWebhooks: maxBodyBytes must be positive')
  if (!(leaseMs > deadlineMs)) throw new RangeError('createWebhooks: leaseMs must be longer than deadlineMs')
  const secretOption = options.secret
  const staticSecrets = typeof secretOption === 'function' ? undefined : checkSecrets(secretOption)
  const schemas: SchemaMap = { ...eventSchemas, ...options.schemas }
  const store = options.store ?? memoryStore()
  const logger = options.logger ?? console
  const handlers = new Map<string, Handler<never>[]>()
  const anyHandlers: Handler<never>[] = []
  const errorListeners: ErrorListener[] = []
  let storeReady: Promise<void> | undefined
  let initialized = !store.init

  function checkSecrets(secret: string | readonly string[]): readonly string[] {
    const list = typeof secret === 'string' ? [secret] : secret
    if (!Array.isArray(list) || list.length === 0 || list.some((s) => typeof s !== 'string' || s === '')) {
      throw new TypeError('createWebhooks: secret must be a non-empty string, a list of them, or a function')
    }
    return list
  }

  function report(error: WebhookError): void {
    if (errorListeners.length === 0) {
      logger.error(`[payhooks] ${error.status} ${error.code}: ${error.message}`)
      return
    }
    for (const listener of errorListeners) {
      try {
        listener(error)
      } catch (listenerError) {
        logger.error(`[payhooks] onError listener threw: ${String(listenerError).split('\n')[0]}`)
      }
    }
  }

  function reject(error: WebhookError, headers?: Record<string, string>): WebhookResult {
    report(error)
    return {
      status: error.status,
      headers: { 'content-type': CONTENT_TYPE, ...headers },
      body: JSON.stringify({ error: error.code, message: error.message }),
    }
  }

  async function runHandlers(event: QueuedEvent): Promise<unknown[]> {
    const specific = handlers.get(event.event_type)
    const all = specific ? (anyHandlers.length > 0 ? [...specific, ...anyHandlers] : specific) : anyHandlers
    if (all.length === 1) {
      try {
        const result = (all[0] as Handler<QueuedEvent>)(event)
        if (isThenable(result)) await result
        return NO_ERRORS
      } catch (error) {
        return [error]
      }
    }
    const results = await Promise.allSettled(all.map(async (handler) => (handler as Handler<QueuedEvent>)(event)))
    return results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
  }

  const queue = options.queue

  /** Shared between the request and the deadline: who answered, and what is still running. */
  interface Attempt {
    answered: boolean
    event?: QueuedEvent
  }

  async function processDelivery(delivery: RawDelivery, attempt: Attempt): Promise<WebhookResult> {
    if (delivery.method !== undefined && delivery.method !== 'POST') {
      return reject(new MethodNotAllowedError(delivery.method), { allow: 'POST' })
    }
    const body = delivery.body
    if ((typeof body === 'string' ? body.length : body.byteLength) > maxBodyBytes) {
      return reject(new PayloadTooLargeError(maxBodyBytes))
    }
    const signature = delivery.getHeader(SIGNATURE_HEADER)
    if (!signature) {
      return reject(new SignatureError('missing_signature', `missing ${SIGNATURE_HEADER} header`))
    }
    if (!isSignatureShaped(signature)) {
      return reject(new SignatureError('invalid_signature', `${SIGNATURE_HEADER} must be 64 hex characters`))
    }
    const secrets =
      staticSecrets ?? checkSecrets(await (secretOption as Exclude<SecretOption, string | readonly string[]>)(delivery))
    let matched = matchSecret(secrets, body, signature)
    if (typeof matched !== 'number') matched = await matched
    if (matched < 0) {
      return reject(new SignatureError('invalid_signature', 'signature does not match the body'))
    }

    let parsed: unknown
    try {
      parsed = JSON.parse(typeof body === 'string' ? body : decoder.decode(body))
    } catch {
      return reject(new PayloadError('invalid_json', 'body is not valid JSON'))
    }
    if (!isQueuedEvent(parsed)) {
      return reject(new PayloadError('invalid_envelope', 'body needs a non-empty string event_id and event_type'))
    }
    const { event_id: eventId, event_type: eventType } = parsed
    const schema = schemas[eventType]
    let event: QueuedEvent = parsed
    if (schema) {
      const result = v.safeParse(schema, parsed)
      if (!result.success) return reject(new SchemaError(eventId, eventType, flattenIssues(result.issues)))
      event = result.output
    }
    attempt.event = event

    if (queue) {
      try {
        await queue.enqueue(event)
      } catch (cause) {
        throw new StoreError('enqueue', cause, eventId, eventType)
      }
      return ok(eventId, 'queued')
    }
    const outcome = await dispatchEvent(event, attempt)
    if (outcome.status !== 'in_progress') return ok(eventId, outcome.status)
    const seconds =
      outcome.retryAfterMs === undefined ? RETRY_AFTER_SECONDS : String(Math.ceil(outcome.retryAfterMs / 1000))
    return {
      status: 409,
      headers: { 'content-type': CONTENT_TYPE, 'retry-after': seconds },
      body: JSON.stringify({ error: 'in_progress', message: `event ${eventId} is being handled by another delivery` }),
    }
  }

  /** Claim, run handlers, then complete (or release and throw {@link HandlerError}). */
  async function dispatchEvent(event: QueuedEvent, attempt: Attempt): Promise<DispatchOutcome> {
    const { event_id: eventId, event_type: eventType } = event
    let claim: ClaimResult
    try {
      if (!initialized) {
        storeReady ??= Promise.resolve(store.init?.())
        await storeReady
        initialized = true
      }
      const pending = store.claim(eventId, leaseMs)
      claim = isThenable(pending) ? await pending : pending
    } catch (cause) {
      storeReady = undefined // a failed init is tried again by the next delivery
      throw new StoreError(initialized ? 'claim' : 'init', cause, eventId, eventType)
    }
    if (claim.status === 'done') return { status: 'duplicate' }
    if (claim.status === 'processing') return { status: 'in_progress', retryAfterMs: claim.retryAfterMs }
    const token = claim.token
    const errors = await runHandlers(event)
    if (errors.length > 0) {
      try {
        const released = store.release(eventId, token)
        if (isThenable(released)) await released
      } catch (cause) {
        report(new StoreError('release', cause, eventId, eventType))
      }
      throw new HandlerError(eventId, eventType, errors, attempt.answered)
    }
    try {
      let completed = store.complete(eventId, token)
      if (isThenable(completed)) completed = await completed
      if (!completed) {
        const lost = new Error(
          `claim lost before completion (handlers outlived leaseMs ${leaseMs}); a retry may run them again`,
        )
        report(new StoreError('complete', lost, eventId, eventType))
      }
    } catch (cause) {
      // Handlers succeeded, so the event is handled: acknowledge it. A retry may run it again.
      report(new StoreError('complete', cause, eventId, eventType))
    }
    return { status: 'processed' }
  }

  function receive(delivery: RawDelivery): Promise<WebhookResult> {
    const attempt: Attempt = { answered: false }
    return new Promise((resolve) => {
      // Whatever the work is waiting on (handlers, store, secret resolver), the answer goes out at the deadline.
      const timer = setTimeout(() => {
        attempt.answered = true
        const event = attempt.event
        const error = new DeadlineError(deadlineMs, event?.event_id, event?.event_type)
        resolve(reject(error, { 'retry-after': RETRY_AFTER_SECONDS }))
      }, deadlineMs)
      const settle = (result: WebhookResult) => {
        if (attempt.answered) return
        attempt.answered = true
        clearTimeout(timer)
        resolve(result)
      }
      processDelivery(delivery, attempt).then(settle, (error: unknown) =>
        settle(reject(error instanceof WebhookError ? error : new InternalError(error, attempt.event))),
      )
    })
  }

  const webhooks: Webhooks<EventMap<S>> = {
    on(type, handler) {
      const list = handlers.get(type)
      if (list) list.push(handler as Handler<never>)
      else handlers.set(type, [handler as Handler<never>])
      return this
    },
    onAny(handler) {
      anyHandlers.push(handler as Handler<never>)
      return this
    },
    onError(listener) {
      errorListeners.push(listener)
      return this
    },
    receive,
    reject: (error) => reject(error),
    report,
    dispatch: (event) => dispatchEvent(event, { answered: true, event }),
    async handle(request) {
      const getHeader: HeaderLookup = (name) => request.headers.get(name)
      if (request.method !== 'POST') return toResponse(await receive({ method: request.method, body: '', getHeader }))
      const body = await readBody(request, maxBodyBytes)
      if (!body) return toResponse(reject(new PayloadTooLargeError(maxBodyBytes)))
      return toResponse(await receive({ body, getHeader }))
    },
    maxBodyBytes,
    deadlineMs,
  }
  queue?.attach?.(webhooks as Webhooks<unknown>)
  return webhooks
}
