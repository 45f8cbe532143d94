import type { WebhookError } from '../errors/index.js'
import type { Log, LogFields } from '../logging/log.js'

/** One line per reason per window; the rest are counted and told in one line at the window's end. */
const WINDOW_MS = 1000
/** Reasons kept at once: a store's messages may vary (a host, a port), so the map is bounded. */
const MAX_REASONS = 256

interface Reason {
  /** When the current window ends: until then, lines of this reason are counted, not written. */
  until: number
  suppressed: number
  level: 'warn' | 'error'
  fields: LogFields
  message: string
  timer: ReturnType<typeof setTimeout> | undefined
}

/**
 * The reason a failure's log line may be held back for, or `undefined` to write every one: requests refused for
 * their signature (a sender without the secret, a scanner, a flood: logged at `warn`), deliveries of a quarantined
 * event type, and store failures that repeat the same operation and cause (a store down fails every delivery alike).
 */
export function throttledReason(error: WebhookError): string | undefined {
  const code = error.code
  // The signature doctor's hint is left out: under a flood its budget runs out, and the hint with it.
  if (code === 'missing_signature' || code === 'invalid_signature') return code
  // A quarantined type's deliveries, refused alike; the report that it was quarantined is always written.
  if (code === 'quarantined') return (error as { started?: boolean }).started ? undefined : `${code}:${error.eventType}`
  if (code !== 'store_unavailable') return undefined
  const cause = error.cause
  const detail = cause instanceof Error ? cause.message : String(cause)
  return `${code}:${(error as { operation?: string }).operation}:${detail.split('\n')[0]}`
}

/**
 * Writes at most one line per reason a second: the first at once, the others of its second counted and told in one
 * line at its end (`… (and 41 more like it in the last 1 s)`, field `suppressed: 41`), so a flood of refusals or a
 * store outage logs two lines a second per reason, not one per request.
 */
export class Throttle {
  private readonly reasons = new Map<string, Reason>()

  constructor(private readonly log: Log) {}

  write(reason: string, level: 'warn' | 'error', fields: LogFields, message: string): void {
    const now = Date.now()
    const held = this.reasons.get(reason)
    if (held !== undefined && (now < held.until || held.timer !== undefined)) {
      held.suppressed++
      held.fields = fields
      held.message = message
      held.timer ??= unref(setTimeout(() => this.flush(reason), held.until - now))
      return
    }
    if (held === undefined && this.reasons.size >= MAX_REASONS) this.forgetQuiet(now)
    this.log[level](fields, message)
    this.reasons.set(reason, { until: now + WINDOW_MS, suppressed: 0, level, fields, message, timer: undefined })
  }

  /** The window's end: tells how many were held back, and opens the next window. */
  private flush(reason: string): void {
    const held = this.reasons.get(reason)
    if (held === undefined) return
    held.timer = undefined
    const { suppressed } = held
    held.suppressed = 0
    held.until = Date.now() + WINDOW_MS
    this.log[held.level](
      { ...held.fields, suppressed },
      `${held.message} (and ${suppressed} more like it in the last ${WINDOW_MS / 1000} s, not logged one by one)`,
    )
  }

  private forgetQuiet(now: number): void {
    for (const [reason, held] of this.reasons)
      if (held.timer === undefined && now >= held.until) this.reasons.delete(reason)
    // Still full of live windows (a cause that varies with each failure): start over rather than grow.
    if (this.reasons.size >= MAX_REASONS) {
      for (const held of this.reasons.values()) clearTimeout(held.timer)
      this.reasons.clear()
    }
  }
}

const unref = (timer: ReturnType<typeof setTimeout>) => {
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}
