/**
 * Option checks shared by the factories of every payhooks package, so they all refuse bad options the same way:
 * synchronously, at construction, with `factory: option must ...` as the message (`RangeError` for a value out of
 * range, `TypeError` for a value of the wrong kind). Each helper returns the value it checked.
 *
 * @example
 * import { positiveInteger, positiveNumber } from '@payhooks/core/validations'
 *
 * export function myStore(options: { maxEntries?: number; timeoutMs?: number } = {}) {
 *   const maxEntries = positiveInteger(options.maxEntries ?? 1000, 'myStore', 'maxEntries')
 *   const timeoutMs = positiveNumber(options.timeoutMs ?? 1000, 'myStore', 'timeoutMs')
 *   return { maxEntries, timeoutMs }
 * }
 */

/**
 * Throws `new ErrorClass(`${where}: ${name} must ${requirement}`)` unless `ok`. The building block of the other
 * helpers, for requirements they do not cover.
 *
 * @example
 * check(leaseMs > deadlineMs, 'createWebhooks', 'leaseMs', 'be longer than deadlineMs')
 * check(typeof prefix === 'string', 'redisStore', 'keyPrefix', 'be a string', TypeError)
 */
export function check(
  ok: boolean,
  where: string,
  name: string,
  requirement: string,
  ErrorClass: RangeErrorConstructor | TypeErrorConstructor = RangeError,
): void {
  if (!ok) throw new ErrorClass(`${where}: ${name} must ${requirement}`)
}

/**
 * A safe integer of at least 1, or `RangeError: where: name must be a positive integer`.
 *
 * @example
 * const concurrency = positiveInteger(options.concurrency ?? 4, 'inProcessQueue', 'concurrency')
 */
export function positiveInteger(value: number, where: string, name: string): number {
  check(Number.isSafeInteger(value) && value >= 1, where, name, 'be a positive integer')
  return value
}

/**
 * A safe integer of at least 0, or `RangeError: where: name must be >= 0`.
 *
 * @example
 * const retries = nonNegativeInteger(options.retries ?? 3, 'inProcessQueue', 'retries')
 */
export function nonNegativeInteger(value: number, where: string, name: string): number {
  check(Number.isSafeInteger(value) && value >= 0, where, name, 'be >= 0')
  return value
}

/**
 * A finite number above 0, or `RangeError: where: name must be a positive number`.
 *
 * @example
 * const timeoutMs = positiveNumber(options.commandTimeoutMs ?? 1000, 'redisStore', 'commandTimeoutMs')
 */
export function positiveNumber(value: number, where: string, name: string): number {
  check(value > 0 && Number.isFinite(value), where, name, 'be a positive number')
  return value
}

/**
 * A finite number of at least 0, or `RangeError: where: name must be >= 0`.
 *
 * @example
 * const backoffMs = nonNegativeNumber(options.backoffMs ?? 1000, 'inProcessQueue', 'backoffMs')
 */
export function nonNegativeNumber(value: number, where: string, name: string): number {
  check(value >= 0 && Number.isFinite(value), where, name, 'be >= 0')
  return value
}

/** Bounds of {@link inRange}; give one or two of them. */
export interface Bounds {
  /** Exclusive lower bound: "above". */
  above?: number
  /** Inclusive lower bound: "at least". */
  min?: number
  /** Exclusive upper bound: "below". */
  below?: number
  /** Inclusive upper bound: "at most". */
  max?: number
}

/**
 * A number within `bounds`, or `RangeError: where: name must be above 0 and below 10000 (why)`, the bounds spelt
 * out as "above", "at least", "below" and "at most". NaN is never in range; infinities are when the bounds allow.
 *
 * @example
 * inRange(deadlineMs, 'createWebhooks', 'deadlineMs', { above: 0, below: 10_000 }, 'the service waits 10 s')
 * inRange(maxEntries, 'memoryStore', 'maxEntries', { min: 1 })
 */
export function inRange(value: number, where: string, name: string, bounds: Bounds, why?: string): number {
  const { above, min, below, max } = bounds
  const ok =
    typeof value === 'number' &&
    (above === undefined || value > above) &&
    (min === undefined || value >= min) &&
    (below === undefined || value < below) &&
    (max === undefined || value <= max)
  if (!ok) {
    const parts: string[] = []
    if (above !== undefined) parts.push(`above ${above}`)
    if (min !== undefined) parts.push(`at least ${min}`)
    if (below !== undefined) parts.push(`below ${below}`)
    if (max !== undefined) parts.push(`at most ${max}`)
    check(false, where, name, `be ${parts.join(' and ')}${why ? ` (${why})` : ''}`)
  }
  return value
}

/**
 * A string of at least one character, or `TypeError: where: name must be a non-empty string`.
 *
 * @example
 * const prefix = nonEmptyString(options.prefix ?? 'payhooks', 'bullmqQueue', 'prefix')
 */
export function nonEmptyString(value: unknown, where: string, name: string): string {
  check(typeof value === 'string' && value !== '', where, name, 'be a non-empty string', TypeError)
  return value as string
}
