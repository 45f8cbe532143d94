import { type EventHandler, warn } from '../event-handler/index.js'
import { ANSWER_LIMIT_MS } from '../service-contract.js'
import type { HeaderLookup } from '../types.js'
import { check, nonNegativeNumber } from '../validations.js'

/** The `proxyArrival` option of `createWebhooks`. */
export interface ProxyArrivalOptions {
  /**
   * The request header your proxy sets to the time it received the request, overwriting whatever the client sent
   * (nginx: `set $arrival $msec;` and `proxy_set_header X-Request-Start "t=$arrival";`). Read as `t=<seconds>.<ms>`
   * (nginx's `$msec`), or `t=` with whole seconds, milliseconds or microseconds; the `t=` is optional.
   */
  header: string
  /**
   * How far the proxy's clock may run ahead of this receiver's. A time up to this far ahead counts as now; one
   * further ahead, or more than the service's 10 s plus this in the past, is ignored (the receiver's own arrival
   * time is used) and warned about once.
   * @default 1000
   */
  maxSkewMs?: number
}

/** A checked `proxyArrival` option, with the warnings already given. */
export interface ProxyArrival {
  readonly header: string
  readonly maxSkewMs: number
  readonly warned: Set<string>
}

/** Checks the `proxyArrival` option (a `TypeError` or `RangeError` naming it); `undefined` when not set. */
export function checkProxyArrival(option: ProxyArrivalOptions | undefined): ProxyArrival | undefined {
  if (option === undefined) return undefined
  const header = (option as { header?: unknown } | null)?.header
  const valid = typeof header === 'string' && /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(header)
  check(valid, 'createWebhooks', 'proxyArrival.header', 'be a header name', TypeError)
  const maxSkewMs = nonNegativeNumber(option.maxSkewMs ?? 1000, 'createWebhooks', 'proxyArrival.maxSkewMs')
  return { header: (header as string).toLowerCase(), maxSkewMs, warned: new Set() }
}

const REQUEST_START = /^\s*(?:t=)?(\d{1,20})(?:\.(\d{1,9}))?\s*$/

/**
 * The time (ms since the epoch) in an `X-Request-Start` value: `t=1700000000.123` (seconds with a fraction, nginx's
 * `$msec`), or a whole number of seconds, milliseconds or microseconds told apart by size; `undefined` otherwise.
 *
 * @example
 * parseRequestStart('t=1700000000.123') // 1700000000123
 * parseRequestStart('t=1700000000123456') // 1700000000123.456
 */
export function parseRequestStart(value: string): number | undefined {
  const match = REQUEST_START.exec(value)
  if (!match) return undefined
  const whole = Number(match[1])
  if (match[2] !== undefined) return whole * 1000 + Number(`0.${match[2]}`) * 1000
  if (whole < 1e11) return whole * 1000
  if (whole < 1e14) return whole
  if (whole < 1e17) return whole / 1000
  return whole / 1e6
}

/**
 * When the request reached the proxy, by its header, if that is usable: never later than `now`, so it can only
 * shorten the deadline. Missing, unreadable, too far ahead or too old: `now`, and a warning (once per kind).
 */
export function arrivalTime(
  arrival: ProxyArrival,
  getHeader: HeaderLookup,
  now: number,
  eventHandler: EventHandler,
): number {
  const value = getHeader(arrival.header)
  if (value === undefined || value === null || value === '') {
    return ignored(arrival, eventHandler, 'proxy_arrival_missing', 'is missing', now)
  }
  const at = parseRequestStart(String(value))
  if (at === undefined) return ignored(arrival, eventHandler, 'proxy_arrival_invalid', 'is not a time', now)
  if (at > now + arrival.maxSkewMs) {
    return ignored(arrival, eventHandler, 'proxy_arrival_future', `is ${Math.round(at - now)} ms ahead`, now)
  }
  if (at < now - ANSWER_LIMIT_MS - arrival.maxSkewMs) {
    return ignored(arrival, eventHandler, 'proxy_arrival_old', `is ${Math.round(now - at)} ms old`, now)
  }
  return Math.min(at, now)
}

function ignored(arrival: ProxyArrival, eventHandler: EventHandler, code: string, what: string, now: number) {
  if (!arrival.warned.has(code)) {
    arrival.warned.add(code)
    warn(
      eventHandler,
      { code },
      `proxyArrival: the ${arrival.header} header ${what}, so the deadline counts from this receiver's arrival ` +
        '(check that the proxy sets it on every request and that its clock is in sync); warned once',
    )
  }
  return now
}
