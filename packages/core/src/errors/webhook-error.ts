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
  | 'event_held'
  | 'deadline_exceeded'
  | 'store_unavailable'
  | 'raw_body_unavailable'
  | 'closing'
  | 'busy'
  | 'quarantined'
  | 'paused'
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
  /**
   * What the service was answered when it was not this error's `status` and `code`: `{ status: 200, code: 'parked' }`
   * once a durable dead-letter store keeps the event (see `parked`), or, on a {@link StoreError} that failed to park
   * an event, the refusal's own answer (`{ status: 422, code: 'schema_mismatch' }`). Undefined otherwise.
   * @example
   * webhooks.onError((error) => {
   *   const answer = error.answered ?? { status: error.status, code: error.code }
   *   console.warn(`${error.code}: answered ${answer.status} ${answer.code}`)
   * })
   */
  declare answered?: { status: number; code: string }
  /**
   * True when the event of this error was kept in the dead-letter store for `webhooks.deadLetters.replay`: with a
   * durable store (Redis, PostgreSQL) it was answered 200 `parked` (`answered` says so) and the service stops
   * retrying; with one that is not durable it still got this error's own answer. Undefined when nothing was parked.
   * On an {@link EventConflictError} it says the first body is the one parked.
   * @example
   * webhooks.onError((error) => {
   *   if (error.parked) console.info(`${error.eventId} parked: replay it with payhooks dead-letters replay`)
   * })
   */
  declare parked?: boolean
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
