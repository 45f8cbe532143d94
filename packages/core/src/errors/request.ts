import type { SignatureHint } from '../signature-doctor/hints.js'
import { WebhookError } from './webhook-error.js'

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
