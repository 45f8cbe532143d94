import type { StoreErrorOperation } from '../telemetry/store-operations.js'
import { WebhookError, type WebhookErrorCode } from './webhook-error.js'

/** 500: a handler threw or rejected. The claim is released so the service's retry runs the handlers again. */
export class HandlerError extends WebhookError {
  override name = 'HandlerError'
  constructor(
    eventId: string,
    eventType: string,
    readonly errors: unknown[],
    /** True when the failure came after the response was already sent (deadline overrun). */
    readonly afterResponse = false,
  ) {
    const first = errors[0]
    const detail = handlerDetail(first)
    super(
      'handler_failed',
      500,
      `handler failed for ${eventType} ${eventId}: ${detail.split('\n')[0]}${errors.length > 1 ? ` (+${errors.length - 1} more)` : ''}`,
      eventId,
      eventType,
      { cause: first },
    )
  }
}

/**
 * What a handler's failure says after the prefix. A handler that rethrew its signal's reason (it honoured the
 * `maxRunMs` abort) stopped, and its claim is released: said so, not the reason's own "still running"; a
 * `HandlerError` rethrown is told without its own "handler failed for …" prefix.
 */
function handlerDetail(first: unknown): string {
  if (!(first instanceof Error)) return String(first)
  if (first instanceof HandlerError && first.code === 'handler_timeout') {
    const { maxRunMs } = first as HandlerTimeoutError
    return `stopped on its signal, aborted at maxRunMs (${maxRunMs} ms); claim released for the next retry`
  }
  return first instanceof HandlerError ? first.message.replace(/^handler failed for \S+ \S+: /, '') : first.message
}

/**
 * The event's handlers were still running `maxRunMs` after its claim (a handler that ignores its signal: a `fetch`
 * without one on a hung connection, a driver call with no timeout). Their `context.signal` was aborted with this
 * error and it was reported to `onError`; the run counts as hung until it settles. Its claim, ordering key and
 * event slot stay held, renewed, meanwhile (`close()` too leaves them held): a handler still running is never run
 * again beside itself, so the service's retries are answered 409 `in_progress` (parked as an {@link EventHeldError}
 * on the service's last tries) until it settles or the process ends (its lease then runs out). A `HandlerError`
 * with its own code (status 500).
 */
export class HandlerTimeoutError extends HandlerError {
  override name = 'HandlerTimeoutError'
  override readonly code: WebhookErrorCode = 'handler_timeout'
  constructor(
    /** The receiver's `maxRunMs`. */
    readonly maxRunMs: number,
    eventId: string,
    eventType: string,
    afterResponse = false,
  ) {
    super(
      eventId,
      eventType,
      [
        new Error(
          `handlers still running after maxRunMs (${maxRunMs} ms): signal aborted; a handler that ignores it keeps the event (claim held) until it settles`,
        ),
      ],
      afterResponse,
    )
  }
}

/**
 * 503: the work was not finished within `deadlineMs`. Handlers keep running; if they succeed the
 * event is marked done, so the service's retry is answered as a duplicate.
 */
export class DeadlineError extends WebhookError {
  override name = 'DeadlineError'
  constructor(deadlineMs: number, eventId?: string, eventType?: string) {
    super(
      'deadline_exceeded',
      503,
      `not finished within ${deadlineMs} ms${eventId ? ` for ${eventType} ${eventId}` : ''}; still running`,
      eventId,
      eventType,
    )
  }
}

/**
 * 503: the dedupe store failed. Nothing is acknowledged that could not be recorded. A dead-letter store that failed
 * to park an event refused for another reason leaves that reason's answer (a 422 `schema_mismatch`...): `answered`
 * then says so, and the log line reads `store_unavailable (answered 422 schema_mismatch)`.
 */
export class StoreError extends WebhookError {
  override name = 'StoreError'
  /**
   * The answer the delivery got when it was not this error's 503: the status and code of the error whose event
   * could not be parked.
   * @example
   * webhooks.onError((error) => {
   *   if (error instanceof StoreError) console.error(error.answered?.status ?? error.status, error.message)
   * })
   */
  declare answered?: { status: number; code: string }
  constructor(
    /** What failed: `claim`, `complete`, `enqueue`, `dead-letter park`... (see {@link StoreErrorOperation}) */
    readonly operation: StoreErrorOperation,
    cause: unknown,
    eventId?: string,
    eventType?: string,
  ) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    super(
      'store_unavailable',
      503,
      `store ${operation} failed${eventId ? ` for ${eventId}` : ''}: ${detail.split('\n')[0]}`,
      eventId,
      eventType,
      { cause },
    )
  }
}

/**
 * 503: the receiver is shutting down (`webhooks.close()` was called). Nothing was verified or run; the service
 * retries later, reaching another instance or this one restarted.
 */
export class ClosingError extends WebhookError {
  override name = 'ClosingError'
  constructor() {
    super('closing', 503, 'receiver is shutting down; retry later')
  }
}

/**
 * 503: the receiver was handling `maxConcurrentEvents` events already, and no slot freed in time for this delivery
 * to finish before its deadline (refused at once when its deadline left less than 1.5 times the expected run, else
 * when it could no longer, or at the deadline). Nothing was claimed or run; the service retries later.
 */
export class BusyError extends WebhookError {
  override name = 'BusyError'
  constructor(
    /** The receiver's `maxConcurrentEvents`. */
    readonly maxConcurrentEvents: number,
    eventId?: string,
    eventType?: string,
    /**
     * The slots of the event's type (its `bulkheads` share), when it waited for one of those: its type held them
     * all, whatever the other slots did.
     */
    readonly share?: number,
  ) {
    const among =
      share === undefined
        ? `maxConcurrentEvents (${maxConcurrentEvents})`
        : `the ${share} of maxConcurrentEvents (${maxConcurrentEvents}) its type may hold (bulkheads)`
    super(
      'busy',
      503,
      `no free slot among ${among} before the deadline${eventId ? ` for ${eventType} ${eventId}` : ''}; nothing claimed or run`,
      eventId,
      eventType,
    )
  }
}

/**
 * 503: the event's type is quarantined (`bulkheads`): `quarantineAfter` of its runs (by default its whole share of
 * the slots) still run past `deadlineMs`, their handlers ignoring their signal or waiting on something that never
 * answers. Reported once when the type is quarantined, naming the run that tipped it (`started`), then for each
 * delivery refused: nothing claimed or run, the service retries later (on its last tries the event is parked with a
 * durable `deadLetters`). The quarantine lifts as soon as one of those runs settles.
 */
export class QuarantinedError extends WebhookError {
  override name = 'QuarantinedError'
  constructor(
    /** How many runs of the type were running past `deadlineMs`. */
    readonly overrunning: number,
    /** Since when the type is quarantined. */
    readonly since: Date,
    /** The receiver's `deadlineMs`. */
    readonly deadlineMs: number,
    eventId: string | undefined,
    eventType: string,
    /** True on the report that the type was just quarantined (`eventId` is then its run that tipped it). */
    readonly started = false,
  ) {
    super(
      'quarantined',
      503,
      started
        ? `event type ${eventType} quarantined: ${overrunning} of its runs (the last ${eventId}) still running past deadlineMs (${deadlineMs} ms); its deliveries are answered 503 until one settles`
        : `event type ${eventType} quarantined since ${since.toISOString()} (${overrunning} of its runs still running past deadlineMs, ${deadlineMs} ms)${eventId ? `; ${eventId}` : ''} not claimed or run`,
      eventId,
      eventType,
    )
  }
}

/**
 * 409: an event with an ordering rule came on the service's last tries (signed over 71 hours ago) while another
 * event's claim held its ordering key (or another delivery the event itself), so it could not run before the
 * service stops retrying. Reported when it is parked in `deadLetters` (as a `handler_failed` dead letter, this
 * error's message as its reason); replay it once the key is free.
 */
export class KeyHeldError extends WebhookError {
  override name = 'KeyHeldError'
  constructor(
    /** The event's ordering key. */
    readonly orderingKey: string,
    /** Since when another event's claim holds the key (ms since the epoch), when the store says. */
    readonly heldSince: number | undefined,
    eventId: string,
    eventType: string,
  ) {
    const since = heldSince === undefined ? '' : ` since ${new Date(heldSince).toISOString()}`
    super(
      'key_held',
      409,
      `ordering key ${JSON.stringify(orderingKey)} of ${eventType} ${eventId} held by another delivery${since} on the service's last tries`,
      eventId,
      eventType,
    )
  }
}

/**
 * 409: an event came on the service's last tries (signed over 71 hours ago) while its handlers still ran in another
 * delivery (past its deadline, or hung past `maxRunMs`; in this process or another instance): a 409 then could be
 * the last answer the service gets. Reported when it is parked in `deadLetters` (as a `handler_failed` dead letter,
 * this error's message as its reason). The run goes on holding the event: a replay meanwhile is answered
 * `in_progress`; once it succeeded, the replay finds its done marker (a duplicate); once it failed, the replay runs
 * the event.
 */
export class EventHeldError extends WebhookError {
  override name = 'EventHeldError'
  constructor(eventId: string, eventType: string) {
    super(
      'event_held',
      409,
      `handlers of ${eventType} ${eventId} still running in another delivery on the service's last tries`,
      eventId,
      eventType,
    )
  }
}

/** 500: anything else went wrong, such as a `secret` function that threw. */
export class InternalError extends WebhookError {
  override name = 'InternalError'
  constructor(cause: unknown, event?: { event_id: string; event_type: string }) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    super('internal_error', 500, `internal error: ${detail.split('\n')[0]}`, event?.event_id, event?.event_type, {
      cause,
    })
  }
}

/**
 * 503: the event's type is paused by an operator (`webhooks.pause`), on this instance or another sharing the pause
 * store. With a durable `deadLetters` the event is parked instead (a `paused` letter, answered 200 `parked`) and
 * replayed by `webhooks.resume`; without one it is answered 503 `paused`, nothing claimed or run, and the service
 * retries. Not reported to `onError` for each delivery (a pause is deliberate): counted in `stats()`, the journal and
 * OpenTelemetry as the outcome `paused`.
 */
export class PausedError extends WebhookError {
  override name = 'PausedError'
  constructor(
    /** Since when the type (or every type, `'*'`) is paused. */
    readonly since: Date,
    /** The pause's type: the event's, or `'*'`. */
    readonly pausedType: string,
    eventId: string | undefined,
    eventType: string,
  ) {
    super(
      'paused',
      503,
      `event type ${eventType} paused${pausedType === '*' ? ' (every type)' : ''} since ${since.toISOString()}${eventId ? `; ${eventId}` : ''} not claimed or run`,
      eventId,
      eventType,
    )
  }
}
