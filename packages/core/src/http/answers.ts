import type { WebhookError, WebhookErrorCode } from '../errors/index.js'
import { SIGNATURE_HEADER } from '../service-contract.js'
import type { WebhookResult } from '../types.js'

const CONTENT_TYPE = 'application/json'
/** What a 503 asks the service to wait; it retries hourly anyway, so this is advice to other senders. */
const RETRY_AFTER_SECONDS = '60'

/**
 * The one sentence each code is answered with. Fixed: never the error's own message, which may quote what a
 * handler, the store or a secret resolver threw (a database URL with its password, say); that goes to `onError`.
 */
const ANSWER_MESSAGES: Record<WebhookErrorCode, string> = {
  method_not_allowed: 'method not allowed, use POST',
  payload_too_large: 'body larger than this receiver accepts',
  missing_signature: `missing ${SIGNATURE_HEADER} header`,
  invalid_signature: `${SIGNATURE_HEADER} does not match the body`,
  invalid_json: 'body is not valid JSON',
  invalid_envelope: 'body needs a non-empty string event_id and event_type',
  invalid_encoding: 'body is not valid UTF-8',
  invalid_id: 'event_id and event_type must not hold control characters or lone surrogates',
  schema_mismatch: 'event does not match its schema',
  handler_failed: 'a handler failed; retry later',
  handler_timeout: 'handlers did not finish within the longest run allowed; retry later',
  key_held: 'ordering key held by another event; retry later',
  event_held: 'event being handled by another delivery; retry later',
  deadline_exceeded: 'not finished within the deadline; still running, retry later',
  store_unavailable: 'store unavailable; retry later',
  raw_body_unavailable: 'request body already consumed before payhooks saw it',
  closing: 'receiver is shutting down; retry later',
  busy: 'receiver is handling as many events as it may at once; retry later',
  quarantined: 'events of this type are paused: too many of its runs overran the deadline; retry later',
  paused: 'events of this type are paused by an operator; retry later',
  internal_error: 'internal error',
  body_timeout: 'request body not received within the deadline',
  incomplete_body: 'request body ended before it was complete',
  stale_event: 'event older than this receiver accepts and not handled before; not acknowledged',
  future_event: "created_at is ahead of this receiver's clock; retry later",
  event_conflict: 'event already handled',
}

/**
 * Answers that leave the request body unread (or partly read) close the connection, so the rest of the body is
 * not read to keep it alive: Node destroys the socket once the answer is flushed.
 */
const CLOSES_CONNECTION: ReadonlySet<WebhookErrorCode> = new Set([
  'payload_too_large',
  'body_timeout',
  'method_not_allowed',
  'closing',
  // Refused before reading the body (adapters check the header first): a sender without the secret holds nothing.
  'missing_signature',
])
const RETRY_LATER: ReadonlySet<WebhookErrorCode> = new Set([
  'deadline_exceeded',
  'closing',
  'future_event',
  'busy',
  'quarantined',
  'paused',
])

/** 200 for an event handled now, handled before, queued, or parked as a dead letter in a durable store. */
export function ok(eventId: string, status: 'processed' | 'duplicate' | 'queued' | 'parked'): WebhookResult {
  return {
    status: 200,
    headers: { 'content-type': CONTENT_TYPE },
    body: `{"ok":true,"event_id":${JSON.stringify(eventId)},"status":"${status}"}`,
  }
}

/** An ordering key as an answer quotes it: from event data, so kept short. */
const MAX_KEY_CHARS = 64

/**
 * 409 while another delivery holds the event's claim, with `retry-after` from its remaining lease when known. For an
 * event with an ordering key the message names the key (cut to 64 characters), and since when another event holds
 * it when the store says (`keyHeldSince`).
 */
export function inProgress(
  eventId: string,
  retryAfterMs: number | undefined,
  held?: { orderingKey?: string | undefined; keyHeldSince?: number | undefined },
): WebhookResult {
  const seconds = retryAfterMs === undefined ? RETRY_AFTER_SECONDS : String(Math.ceil(retryAfterMs / 1000))
  const key = held?.orderingKey
  const since = held?.keyHeldSince
  const quoted =
    key === undefined ? '' : JSON.stringify(key.length > MAX_KEY_CHARS ? `${key.slice(0, MAX_KEY_CHARS - 3)}...` : key)
  const message =
    key === undefined
      ? `event ${eventId} is being handled by another delivery`
      : since === undefined
        ? `event ${eventId}, or its ordering key ${quoted}, is held by another delivery`
        : `event ${eventId} waits for ordering key ${quoted}, held by another event since ${new Date(since).toISOString()}`
  return {
    status: 409,
    headers: { 'content-type': CONTENT_TYPE, 'retry-after': seconds },
    body: JSON.stringify({ error: 'in_progress', message }),
  }
}

/**
 * The answer for `error`: its status, its code and the fixed sentence for that code, and the headers its status
 * calls for. Only `raw_body_unavailable` keeps its own message: the adapter's fixed advice on mounting the route.
 */
export function errorAnswer(error: WebhookError): WebhookResult {
  const code = error.code
  // A conflicting copy is answered as a plain one would be.
  if (code === 'event_conflict') {
    return error.status === 200 ? ok(error.eventId ?? '', 'duplicate') : inProgress(error.eventId ?? '', undefined)
  }
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPE }
  if (code === 'method_not_allowed') headers.allow = 'POST'
  else if (RETRY_LATER.has(code)) headers['retry-after'] = RETRY_AFTER_SECONDS
  if (CLOSES_CONNECTION.has(code)) headers.connection = 'close'
  const message = code === 'raw_body_unavailable' ? error.message : (ANSWER_MESSAGES[code] ?? 'internal error')
  return { status: error.status, headers, body: JSON.stringify({ error: code, message }) }
}
