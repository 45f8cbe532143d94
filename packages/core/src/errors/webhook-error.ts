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
  | 'handler_timeout'
  | 'key_held'
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
