import type { WebhookError } from '../errors/index.js'

/**
 * What payhooks logs besides its one-line message: codes, statuses and event identifiers, never a secret, a body
 * or a stack.
 */
export interface LogFields {
  /** An error's {@link WebhookErrorCode}, or a warning's code (`memory_store_with_queue`, `unknown_event_type`...). */
  code: string
  /** The HTTP status the delivery was (or would have been) answered. */
  status?: number
  event_id?: string
  event_type?: string
  [field: string]: string | number | boolean | undefined
}

/**
 * Where payhooks logs: `console`, pino, bunyan, or an object of your own. A logger with an `info` method is called
 * with structured fields then the message, pino's order (`logger.error(fields, message)`), which `console` prints
 * as the fields then the message. One without `info` (the `{ error(line) }` shape of earlier versions) is called
 * with the one-line message alone. The first argument is typed as both, so either kind of function fits.
 *
 * @example
 * const webhooks = createWebhooks({ secret, logger: pino() }) // {"code":"store_unavailable","status":503,...,"msg":...}
 * const lines: string[] = []
 * const quiet = createWebhooks({ secret, logger: { error: (line) => lines.push(line) } }) // '[payhooks] 503 ...'
 */
export interface Logger {
  error(fieldsOrLine: LogFields & string, message?: string): void
  warn?(fieldsOrLine: LogFields & string, message?: string): void
  info?(fieldsOrLine: LogFields & string, message?: string): void
}

/** Both logger shapes reduced to one: what payhooks logs through. */
export interface Log {
  error(fields: LogFields, message: string): void
  warn(fields: LogFields, message: string): void
  /** Only loggers with `info` get these; the one-line shape and the default console lines do not. */
  info(fields: LogFields, message: string): void
}

/** The default: one readable line each on the console, read at each call so a replaced `console.error` is used. */
const consoleLines: Logger = {
  error: (line) => console.error(line),
  warn: (line) => console.warn(line),
}

/**
 * The {@link Log} of a `logger` option: a logger with `info` (console, pino) is called with `(fields, message)`;
 * one without (the earlier `{ error(line) }` shape) with the message alone; none prints one line to the console.
 */
export function createLog(logger: Logger | undefined): Log {
  // Typed as both shapes; each call passes the one the logger takes.
  const target = (logger ?? consoleLines) as {
    error(...args: unknown[]): void
    warn?(...args: unknown[]): void
    info?: unknown
  }
  if (typeof target.info === 'function') {
    return {
      error: (fields, message) => target.error(fields, message),
      warn: (fields, message) =>
        typeof target.warn === 'function' ? target.warn(fields, message) : target.error(fields, message),
      info: (fields, message) => (target.info as (fields: LogFields, message: string) => void)(fields, message),
    }
  }
  return {
    error: (_fields, message) => target.error(message),
    warn: (_fields, message) => (typeof target.warn === 'function' ? target.warn(message) : target.error(message)),
    info: () => {},
  }
}

/** The fields of a reported failure: its code, status and event, and the store operation that failed. */
export function errorFields(error: WebhookError): LogFields {
  const { answered } = error
  // `status` is what the delivery was answered.
  const fields: LogFields = { code: error.code, status: answered?.status ?? error.status }
  if (answered !== undefined) fields.answered_code = answered.code
  if (error.parked === true) fields.parked = true
  if (error.eventId !== undefined) fields.event_id = error.eventId
  if (error.eventType !== undefined) fields.event_type = error.eventType
  const hint = (error as { hint?: { code?: unknown } }).hint
  if (typeof hint?.code === 'string') fields.signature_hint = hint.code
  const operation = (error as { operation?: unknown }).operation
  if (typeof operation === 'string') fields.operation = operation
  if ((error as { afterResponse?: unknown }).afterResponse === true) fields.after_response = true
  if (error.code === 'event_conflict') {
    const conflict = error as { receivedDigest?: unknown; handledDigest?: unknown }
    if (typeof conflict.receivedDigest === 'string') fields.received_digest = conflict.receivedDigest
    if (typeof conflict.handledDigest === 'string') fields.handled_digest = conflict.handledDigest
  }
  return fields
}

// Control characters (C0, DEL, C1, the Unicode line and paragraph separators) and lone surrogates: what can split
// a log line, or turns into another character (U+FFFD) once written as UTF-8, to a store or a log.
const UNSAFE_SOURCE =
  '[\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]|[\\ud800-\\udbff](?![\\udc00-\\udfff])|(?<![\\ud800-\\udbff])[\\udc00-\\udfff]'
const UNSAFE = new RegExp(UNSAFE_SOURCE)
const UNSAFE_ALL = new RegExp(UNSAFE_SOURCE, 'g')
const ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** Whether `text` has no control character and no lone surrogate. */
export const isSafeText = (text: string): boolean => !UNSAFE.test(text)

/** `text` with each control character and lone surrogate written as an escape (`\r`, `\n`, `\u0000`, `\ud800`). */
export function escapeText(text: string): string {
  if (!UNSAFE.test(text)) return text
  return text.replace(UNSAFE_ALL, (char) => ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * The one-line message logged for `error`: its own message, except for a schema mismatch, whose issues quote the
 * values they refused (an e-mail address, an amount: the body's), so the log names every field at fault, only.
 * Control characters are escaped, so that nothing a body carries (a field name with a CR or LF) splits the line.
 */
export function logMessage(error: WebhookError): string {
  const hint = (error as { hint?: { code: string; message: string } }).hint
  if (hint) return escapeText(`${error.message} (hint ${hint.code}: ${hint.message})`)
  const issues = (error as { issues?: { path: string }[] }).issues
  if (error.code !== 'schema_mismatch' || !Array.isArray(issues)) return escapeText(error.message)
  const paths = issues.map((issue) => issue.path || '(root)')
  return escapeText(`${error.eventType} ${error.eventId} does not match its schema at ${paths.join(', ')}`)
}
