import type { WebhookError } from '../errors/index.js'
import { errorFields, escapeText, type LogFields, logMessage } from '../logging/log.js'
import { sourceText, throttledReason } from '../refusals/throttle.js'
import type { VerifiedEvent } from '../types.js'
import type { VerifiedSecret } from '../verify/secrets.js'
import type { EventHandler } from './state.js'

/** `503 store_unavailable`, or `store_unavailable (answered 422 schema_mismatch)` when the answer was another's. */
function statusOf(error: WebhookError): string {
  const { answered } = error
  return answered === undefined || error.parked
    ? `${error.status} ${error.code}`
    : `${error.code} (answered ${answered.status} ${answered.code})`
}

/** What became of a parked event: `; parked (answered 200 parked)`, or why it was not acknowledged. */
function parkedNote(error: WebhookError): string {
  if (!error.parked || error.code === 'event_conflict') return ''
  const { answered } = error
  return answered === undefined
    ? '; parked, not acknowledged (the dead-letter store is not durable)'
    : `; parked (answered ${answered.status} ${answered.code})`
}

/**
 * Hands `error` to every `onError` listener, or logs it (one line, or structured fields) when there is none: a
 * request refused for its signature at `warn`, at most once a second per reason and `source` (the client's address,
 * as the adapter knows it), and a store failure like the last one at most once a second (each with the count of
 * the others). A throwing listener is logged. Telemetry counts it either way.
 */
export function report(state: EventHandler, error: WebhookError, source?: string): void {
  state.telemetry?.failure?.(error)
  if (error.code === 'event_conflict') state.stats.conflict()
  const { errorListeners, log } = state
  if (errorListeners.length === 0) {
    const fields = errorFields(error)
    // A refusal of the sender's says who sent it: a flood from one address is throttled apart from the others.
    const from = error.status === 401 && source !== undefined ? ` from ${sourceText(source)}` : ''
    const message = `[payhooks] ${statusOf(error)}${from}: ${logMessage(error)}${parkedNote(error)}`
    const reason = throttledReason(error)
    if (reason === undefined) log.error(fields, message)
    else if (error.status === 401) state.throttle.write(reason, 'warn', fields, message, source)
    else state.throttle.write(reason, 'error', fields, message)
    return
  }
  for (const listener of errorListeners) {
    try {
      listener(error)
    } catch (listenerError) {
      const fields = { ...errorFields(error), code: 'on_error_listener_threw', error_code: error.code }
      log.error(fields, `[payhooks] onError listener threw: ${escapeText(String(listenerError).split('\n')[0] ?? '')}`)
    }
  }
}

/** Logs a warning (`logger.warn`, else `logger.error`) with its `code`; warnings do not go to `onError`. */
export function warn(state: EventHandler, fields: LogFields, message: string): void {
  state.log.warn(fields, `[payhooks] ${escapeText(message)}`)
}

/**
 * Logs at `info` (loggers with `info` only) that a secret other than the first of the list verified `event`: during
 * a rotation these lines stop once the old secret is unused. The first secret, the usual case, logs nothing.
 */
export function logVerifiedWith(state: EventHandler, event: VerifiedEvent, secret: VerifiedSecret): void {
  const fields: LogFields = {
    code: 'verified_with_secret',
    event_id: event.event_id,
    event_type: event.event_type,
    secret_index: secret.index,
  }
  if (secret.label !== undefined) fields.secret_label = secret.label
  const which = `secret ${secret.index}${secret.label === undefined ? '' : ` (${secret.label})`}`
  state.log.info(
    fields,
    escapeText(`[payhooks] ${event.event_type} ${event.event_id} verified with ${which}, not the first of the list`),
  )
}
