import type { StoreErrorOperation } from '../store-operations.js'
import { WebhookError } from './webhook-error.js'

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
    const detail = first instanceof Error ? first.message : String(first)
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

/** 503: the dedupe store failed. Nothing is acknowledged that could not be recorded. */
export class StoreError extends WebhookError {
  override name = 'StoreError'
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
 * 503: the receiver was handling `maxConcurrentEvents` events already, and none finished before this delivery's
 * deadline. Nothing was claimed or run; the service retries later.
 */
export class BusyError extends WebhookError {
  override name = 'BusyError'
  constructor(
    /** The receiver's `maxConcurrentEvents`. */
    readonly maxConcurrentEvents: number,
    eventId?: string,
    eventType?: string,
  ) {
    super(
      'busy',
      503,
      `no free slot among maxConcurrentEvents (${maxConcurrentEvents}) before the deadline${eventId ? ` for ${eventType} ${eventId}` : ''}; nothing claimed or run`,
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
