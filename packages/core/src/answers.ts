import type { WebhookError } from './errors.js'
import type { WebhookResult } from './types.js'

const CONTENT_TYPE = 'application/json'
/** What a 503 asks the service to wait; it retries hourly anyway, so this is advice to other senders. */
const RETRY_AFTER_SECONDS = '60'

/** 200 for an event handled now, handled before, queued, or parked as a dead letter in a durable store. */
export function ok(eventId: string, status: 'processed' | 'duplicate' | 'queued' | 'parked'): WebhookResult {
  return {
    status: 200,
    headers: { 'content-type': CONTENT_TYPE },
    body: `{"ok":true,"event_id":${JSON.stringify(eventId)},"status":"${status}"}`,
  }
}

/** 409 while another delivery holds the event's claim, with `retry-after` from its remaining lease when known. */
export function inProgress(eventId: string, retryAfterMs: number | undefined): WebhookResult {
  const seconds = retryAfterMs === undefined ? RETRY_AFTER_SECONDS : String(Math.ceil(retryAfterMs / 1000))
  return {
    status: 409,
    headers: { 'content-type': CONTENT_TYPE, 'retry-after': seconds },
    body: JSON.stringify({ error: 'in_progress', message: `event ${eventId} is being handled by another delivery` }),
  }
}

/** The answer for `error`: its status, its code and one-line message, and the headers its status calls for. */
export function errorAnswer(error: WebhookError): WebhookResult {
  const headers: Record<string, string> = { 'content-type': CONTENT_TYPE }
  if (error.code === 'method_not_allowed') headers.allow = 'POST'
  else if (error.code === 'deadline_exceeded' || error.code === 'closing') headers['retry-after'] = RETRY_AFTER_SECONDS
  return { status: error.status, headers, body: JSON.stringify({ error: error.code, message: error.message }) }
}
