/** Machine-readable reason, also sent as `error` in the JSON response body. */
export type WebhookErrorCode =
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'missing_signature'
  | 'invalid_signature'
  | 'invalid_json'
  | 'invalid_envelope'
  | 'schema_mismatch'
  | 'handler_failed'
  | 'deadline_exceeded'
  | 'store_unavailable'
  | 'raw_body_unavailable'
  | 'closing'
  | 'internal_error'

/**
 * Base class of every failure payhooks reports to `onError`. `status` is what the service was (or
 * would be) answered; `message` is one line, safe to log: it never holds a secret or a stack.
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

/** 401: the `service-hmac-sha256` header is missing, malformed, or matches no secret. */
export class SignatureError extends WebhookError {
  override name = 'SignatureError'
  constructor(code: 'missing_signature' | 'invalid_signature', message: string) {
    super(code, 401, message)
  }
}

/** 400: a signed body that is not JSON, or lacks `event_id` / `event_type`. */
export class PayloadError extends WebhookError {
  override name = 'PayloadError'
  constructor(code: 'invalid_json' | 'invalid_envelope', message: string, eventId?: string, eventType?: string) {
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
 * service keeps retrying (hourly, for 72 hours) while you fix the schema; no handler ran.
 */
export class SchemaError extends WebhookError {
  override name = 'SchemaError'
  constructor(
    eventId: string,
    eventType: string,
    readonly issues: SchemaIssue[],
  ) {
    const first = issues[0]
    super(
      'schema_mismatch',
      422,
      `${eventType} ${eventId} does not match its schema${first ? `: ${first.path || '(root)'}: ${first.message}` : ''}${issues.length > 1 ? ` (+${issues.length - 1} more)` : ''}`,
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
    /** What failed: `claim`, `complete`, `enqueue`, `dead-letter park`... */
    readonly operation: string,
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
