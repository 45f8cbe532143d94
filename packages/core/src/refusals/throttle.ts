import type { WebhookError } from '../errors/index.js'
import { escapeText, type Log, type LogFields } from '../logging/log.js'

/** One line per reason and source per window; the rest are counted and told in one line at the window's end. */
const WINDOW_MS = 1000
/** Reasons kept at once: a store's messages may vary (a host, a port), so the map is bounded. */
const MAX_REASONS = 256
/**
 * Sources with a window of their own, per reason. Past it (a spray of addresses) the others share one window, so
 * neither memory nor the lines written grow with the addresses a flood comes from.
 */
export const MAX_SOURCES_PER_REASON = 32
/** Distinct addresses counted in the shared window's line; past it, "at least 1024". */
const MAX_COUNTED_SOURCES = 1024
/** The longest source kept: an adapter's address, never longer than an IPv6 address with a zone. */
const MAX_SOURCE_LENGTH = 64

interface Window {
  /** When the current window ends: until then, lines of this reason and source are counted, not written. */
  until: number
  suppressed: number
  level: 'warn' | 'error'
  fields: LogFields
  message: string
  timer: ReturnType<typeof setTimeout> | undefined
  /** The shared window of the sources past {@link MAX_SOURCES_PER_REASON}: the addresses it counted. */
  others: Set<string> | undefined
}

interface Reason {
  /** Each source's window (`''`: none known, or a reason that is not the sender's, a store failure). */
  readonly sources: Map<string, Window>
  /** The window the sources without one of their own share. */
  shared: Window | undefined
}

/**
 * The reason a failure's log line may be held back for, or `undefined` to write every one: requests refused for
 * their signature (a sender without the secret, a scanner, a flood: logged at `warn`, per source), deliveries of a
 * quarantined event type, and store failures that repeat the same operation and cause (a store down fails every
 * delivery alike).
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

/** The source as logged: escaped and cut, so that an adapter's odd address cannot split a line or grow one. */
export const sourceText = (source: string): string => escapeText(source.slice(0, MAX_SOURCE_LENGTH))

/**
 * Writes at most one line per reason and source a second: the first at once, the others of its second counted
 * and told in one line at its end (`… (and 41 more like it from 203.0.113.9 in the last 1 s)`, fields `suppressed:
 * 41`, `source`), so a flood of refusals or a store outage logs two lines a second per reason and source, not one
 * per request, and a flood from one address leaves the lines of every other sender alone. Past
 * {@link MAX_SOURCES_PER_REASON} sources of one reason in a window, the others share one window, told as `from 517
 * other addresses` (field `other_sources`).
 */
export class Throttle {
  private readonly reasons = new Map<string, Reason>()

  constructor(private readonly log: Log) {}

  write(reason: string, level: 'warn' | 'error', fields: LogFields, message: string, source?: string): void {
    const now = Date.now()
    let entry = this.reasons.get(reason)
    if (entry === undefined) {
      if (this.reasons.size >= MAX_REASONS) this.forgetQuiet(now)
      entry = { sources: new Map(), shared: undefined }
      this.reasons.set(reason, entry)
    }
    const key = source === undefined ? '' : sourceText(source)
    const logged = key === '' ? fields : { ...fields, source: key }
    let held = entry.sources.get(key)
    let shared = false
    if (held === undefined && entry.sources.size >= MAX_SOURCES_PER_REASON) {
      forgetQuietSources(entry, now)
      if (entry.sources.size >= MAX_SOURCES_PER_REASON) {
        shared = true
        held = entry.shared
      }
    }
    if (held !== undefined && (now < held.until || held.timer !== undefined)) {
      held.suppressed++
      held.fields = logged
      held.message = message
      if (held.others !== undefined && held.others.size < MAX_COUNTED_SOURCES) held.others.add(key)
      held.timer ??= unref(setTimeout(() => this.flush(held as Window), held.until - now))
      return
    }
    this.log[level](logged, message)
    const window: Window = {
      until: now + WINDOW_MS,
      suppressed: 0,
      level,
      fields: logged,
      message,
      timer: undefined,
      others: shared ? new Set() : undefined,
    }
    if (shared) entry.shared = window
    else entry.sources.set(key, window)
  }

  /** The window's end: tells how many were held back and from where, and opens the next window. */
  private flush(held: Window): void {
    held.timer = undefined
    const { suppressed, others } = held
    held.suppressed = 0
    held.until = Date.now() + WINDOW_MS
    const last = held.fields.source
    let from = typeof last === 'string' ? ` from ${last}` : ''
    let fields: LogFields = { ...held.fields, suppressed }
    if (others !== undefined) {
      const count = others.size >= MAX_COUNTED_SOURCES ? `at least ${MAX_COUNTED_SOURCES}` : String(others.size)
      from = ` from ${count} other address${others.size === 1 ? '' : 'es'}`
      const { source: _source, ...rest } = fields
      fields = { ...rest, other_sources: others.size }
      held.others = new Set()
    }
    this.log[held.level](
      fields,
      `${held.message} (and ${suppressed} more like it${from} in the last ${WINDOW_MS / 1000} s, not logged one by one)`,
    )
  }

  private forgetQuiet(now: number): void {
    for (const [reason, entry] of this.reasons) {
      forgetQuietSources(entry, now)
      if (entry.sources.size === 0 && entry.shared === undefined) this.reasons.delete(reason)
    }
    // Still full of live windows (a cause that varies with each failure): start over rather than grow.
    if (this.reasons.size >= MAX_REASONS) {
      for (const entry of this.reasons.values()) {
        for (const held of entry.sources.values()) clearTimeout(held.timer)
        clearTimeout(entry.shared?.timer)
      }
      this.reasons.clear()
    }
  }
}

/** Drops the windows of `entry` that ended with nothing held back: the next line of their source is written at once. */
function forgetQuietSources(entry: Reason, now: number): void {
  for (const [source, held] of entry.sources) if (quiet(held, now)) entry.sources.delete(source)
  if (entry.shared !== undefined && quiet(entry.shared, now)) entry.shared = undefined
}

const quiet = (held: Window, now: number) => held.timer === undefined && now >= held.until

const unref = (timer: ReturnType<typeof setTimeout>) => {
  ;(timer as { unref?: () => void }).unref?.()
  return timer
}
