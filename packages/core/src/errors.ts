import type { SignatureHint } from './signature-doctor/hints.js'
import type { StoreErrorOperation } from './store-operations.js'

/** Machine-readable reason, also sent as `error` in the JSON response body. */
export type WebhookErrorCode =
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'missing_signature'
  | 'invalid_signature'
  | 'invalid_json'
  | 'invalid_envelope'
  | 'invalid_encoding'
  | 'invalid_id'
  | 'schema_mismatch'
  | 'handler_failed'
  | 'deadline_exceeded'
  | 'store_unavailable'
  | 'raw_body_unavailable'
  | 'closing'
  | 'busy'
  | 'internal_error'
  | 'body_timeout'
  | 'incomplete_body'
  | 'stale_event'
  | 'future_event'
  | 'event_conflict'

/**
 * Base class of every failure payhooks reports to `onError`. `status` is what the service was (or
 * would be) answered. `message` is one line for your logs: it never holds a stack, but it may quote the
 * first line of what a handler, the store or a secret resolver threw (that error itself is `cause`).
 * The HTTP answer never carries it: callers get the `code` and a fixed sentence for that code.
 */
export class WebhookError extends Error {
  override name = 'WebhookError'
  constructor(
    readonly code: WebhookErrorCode,
    readonly status: number,
    message: string,
    readonly eventId?: string,
    readonly eventType?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** 405: the service only POSTs. */
export class MethodNotAllowedError extends WebhookError {
  override name = 'MethodNotAllowedError'
  constructor(method: string) {
    super('method_not_allowed', 405, `method ${method} not allowed, use POST`)
  }
}

/** 413: the body is larger than `maxBodyBytes`. */
export class PayloadTooLargeError extends WebhookError {
  override name = 'PayloadTooLargeError'
  constructor(readonly limit: number) {
    super('payload_too_large', 413, `body larger than ${limit} bytes`)
  }
}

/**
 * 401: the `service-hmac-sha256` header is missing, malformed, or matches no secret. A receiver's `invalid_signature`
 * errors carry the signature doctor's `hint`: the likely cause (`body_reserialized`, `trailing_newline`,
 * `secret_whitespace`...), worked out after the check failed. It goes to `onError`, the log and telemetry, never into
 * the HTTP answer.
 *
 * @example
 * webhooks.onError((error) => {
 *   if (error instanceof SignatureError && error.hint) console.warn(error.hint.code, error.hint.message)
 * })
 */
export class SignatureError extends WebhookError {
  override name = 'SignatureError'
  constructor(
    code: 'missing_signature' | 'invalid_signature',
    message: string,
    /** The signature doctor's diagnosis; absent for `missing_signature`. */
    readonly hint?: SignatureHint,
  ) {
    super(code, 401, message)
  }
}

/**
 * 400: a signed body that is not UTF-8 (`invalid_encoding`) or not JSON (`invalid_json`), lacks `event_id` /
 * `event_type` (`invalid_envelope`), or whose `event_id` or `event_type` holds a control character (CR, LF,
 * NUL...) or a lone surrogate (`invalid_id`: such an id would collide with another, or split a log line, once
 * written to a store or a log). An `invalid_id` error carries them escaped (`\r`, `\u0000`, `\ud800`).
 */
export class PayloadError extends WebhookError {
  override name = 'PayloadError'
  constructor(
    code: 'invalid_json' | 'invalid_envelope' | 'invalid_encoding' | 'invalid_id',
    message: string,
    eventId?: string,
    eventType?: string,
  ) {
    super(code, 400, message, eventId, eventType)
  }
}

/** One problem found by a schema, flattened from valibot's issue. */
export interface SchemaIssue {
  /** Dotted path to the field, such as `data.settlement_amount`. */
  path: string
  message: string
}

/**
 * 422: a correctly signed event of a known type does not match its schema. Answered non-2XX so the
 * service keeps retrying (hourly, for 72 hours) while you fix the schema; no handler ran. The message names every
 * issue (`data.a: …; data.b: …`), as does `issues`.
 */
export class SchemaError extends WebhookError {
  override name = 'SchemaError'
  constructor(
    eventId: string,
    eventType: string,
    /** Every issue valibot found, in its order. */
    readonly issues: SchemaIssue[],
    /**
     * The verified message as parsed (before its schema refused it), when the receiver made this error: parking
     * it needs no second parse.
     */
    readonly event?: { event_id: string; event_type: string; [field: string]: unknown },
  ) {
    const all = issues.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ')
    super(
      'schema_mismatch',
      422,
      `${eventType} ${eventId} does not match its schema${all ? `: ${all}` : ''}`,
      eventId,
      eventType,
    )
  }
}

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
 * 500: an adapter found the body already consumed and parsed by an earlier middleware, so the
 * exact bytes the service signed are gone. The message says how to fix the app.
 */
export class RawBodyUnavailableError extends WebhookError {
  override name = 'RawBodyUnavailableError'
  constructor(message: string) {
    super('raw_body_unavailable', 500, message)
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

/**
 * 408: the request body was still arriving at `deadlineMs` (counted from the request's arrival). The answer asks
 * for the connection to be closed and the read is stopped, so a client sending a byte now and then cannot hold
 * the socket. The service retries the delivery.
 */
export class BodyTimeoutError extends WebhookError {
  override name = 'BodyTimeoutError'
  constructor(deadlineMs: number) {
    super('body_timeout', 408, `request body not received within ${deadlineMs} ms`)
  }
}

/**
 * 400: the request body could not be read to its end: the client closed the connection, or the stream failed
 * (`cause`). Usually nobody is left to read the answer.
 */
export class IncompleteBodyError extends WebhookError {
  override name = 'IncompleteBodyError'
  constructor(cause: unknown) {
    const detail = cause instanceof Error ? cause.message : String(cause)
    super(
      'incomplete_body',
      400,
      `request body ended before it was complete: ${detail.split('\n')[0]}`,
      undefined,
      undefined,
      {
        cause,
      },
    )
  }
}

/**
 * 422: a correctly signed event whose `created_at` is older than `maxEventAgeMs` and that the store does not know
 * as handled. The service stops retrying after 72 hours and the store forgets handled events after its retention,
 * so an event this old is a manual resend after a long outage, or a replay of a captured delivery: the receiver
 * cannot tell which, so it runs no handler. With a durable dead-letter store the event is parked (200 `parked`,
 * code `stale_event`) for `webhooks.deadLetters.replay`; without one it is answered 422, so the service keeps it and retries.
 * One the store knows as handled is a `duplicate` (200) instead. Events without `created_at` are never refused on
 * age.
 */
export class StaleEventError extends WebhookError {
  override name = 'StaleEventError'
  constructor(
    eventId: string,
    eventType: string,
    /** The event's `created_at`, as sent. */
    readonly createdAt: string,
    /** How old the event was when it arrived. */
    readonly ageMs: number,
    /** The verified event, so it can still be acted on (with `webhooks.dispatch`, say) if it is genuine. */
    readonly event: { event_id: string; event_type: string; [field: string]: unknown },
  ) {
    super(
      'stale_event',
      422,
      `${eventType} ${eventId} created at ${createdAt} is ${Math.round(ageMs / 60_000)} min old, older than maxEventAgeMs, and not handled before; handlers not run (a resend after an outage, or a replay)`,
      eventId,
      eventType,
    )
  }
}

/**
 * 503: a correctly signed event whose `created_at` is further ahead of this receiver's clock than
 * `maxClockSkewMs`. One of the two clocks is wrong; accepting it would let it be replayed for longer than the
 * store remembers it, so it is answered non-2XX and the service's hourly retry succeeds once the clocks agree.
 */
export class FutureEventError extends WebhookError {
  override name = 'FutureEventError'
  constructor(
    eventId: string,
    eventType: string,
    /** The event's `created_at`, as sent. */
    readonly createdAt: string,
    /** How far ahead of this receiver's clock it is. */
    readonly aheadMs: number,
  ) {
    super(
      'future_event',
      503,
      `${eventType} ${eventId} created at ${createdAt} is ${Math.round(aheadMs / 1000)} s ahead of this receiver's clock, more than maxClockSkewMs`,
      eventId,
      eventType,
    )
  }
}

/**
 * A validly signed delivery whose `event_id` was handled already (or is being handled) with a body of other bytes.
 * It is answered exactly as a plain copy would be: 200 `duplicate` (`status` 200), or 409 while the first body's
 * handlers still run (`status` 409); no handler runs for it, and this error is reported besides. The service signs
 * each delivery of an event from one stored body, so two bodies under one id mean the sender changed the event,
 * or reused an id: compare the two with what the service holds for the event. Carries both body digests (the
 * first 16 bytes of SHA-256 of the exact bytes, as 32 hex characters: the start of `sha256sum`'s output), never
 * the bodies.
 */
export class EventConflictError extends WebhookError {
  override name = 'EventConflictError'
  constructor(
    eventId: string,
    eventType: string,
    /** Digest of this delivery's body. */
    readonly receivedDigest: string,
    /** Digest of the body the event was (or is being) handled with. */
    readonly handledDigest: string,
    /** True when the first body's handlers were still running (answered 409), false when they were done (200). */
    readonly inProgress: boolean,
  ) {
    super(
      'event_conflict',
      inProgress ? 409 : 200,
      `${eventType} ${eventId} received with a body (sha256 ${receivedDigest}) other than the one ${inProgress ? 'being handled' : 'handled'} (sha256 ${handledDigest}); answered as a duplicate, handlers not run`,
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
