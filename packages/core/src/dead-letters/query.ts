import { check, nonNegativeInteger, positiveInteger } from '../validations.js'
import type { DeadLetter, DeadLetterCountQuery, DeadLetterFilter, DeadLetterQuery } from './types.js'

/** A {@link DeadLetterQuery} with its defaults, checked. */
export type NormalizedDeadLetterQuery = DeadLetterFilter &
  Required<Pick<DeadLetterQuery, 'status' | 'limit' | 'offset'>>

const STATUSES = ['parked', 'replayed', 'all']
const CODES = ['schema_mismatch', 'handler_failed', 'stale_event']

/**
 * `query` with its defaults (`status: 'parked'`, `limit: 100`, `offset: 0`), or a `TypeError`/`RangeError` naming
 * `where`. For dead-letter stores of your own, so they refuse a bad query as payhooks' stores do.
 *
 * @example
 * list(query) {
 *   const { status, limit, offset } = deadLetterQuery(query, 'myDeadLetterStore.list')
 *   // SELECT ... LIMIT limit OFFSET offset
 * }
 */
export function deadLetterQuery(query: DeadLetterQuery = {}, where = 'list'): NormalizedDeadLetterQuery {
  const status = query.status ?? 'parked'
  check(STATUSES.includes(status), where, 'status', "be 'parked', 'replayed' or 'all'", TypeError)
  if (query.code !== undefined) {
    check(
      CODES.includes(query.code),
      where,
      'code',
      "be 'schema_mismatch', 'handler_failed' or 'stale_event'",
      TypeError,
    )
  }
  if (query.eventType !== undefined) {
    check(typeof query.eventType === 'string', where, 'eventType', 'be a string', TypeError)
  }
  for (const name of ['parkedAfter', 'parkedBefore'] as const) {
    const date = query[name]
    if (date !== undefined) {
      check(date instanceof Date && !Number.isNaN(date.getTime()), where, name, 'be a valid Date', TypeError)
    }
  }
  return {
    ...query,
    status,
    limit: positiveInteger(query.limit ?? 100, where, 'limit'),
    offset: nonNegativeInteger(query.offset ?? 0, where, 'offset'),
  }
}

/**
 * `query` of a count with its default (`status: 'parked'`), checked as {@link deadLetterQuery} checks a list's.
 *
 * @example
 * count(query) {
 *   const { status, eventType, code } = deadLetterCountQuery(query, 'myDeadLetterStore.count')
 * }
 */
export function deadLetterCountQuery(
  query: DeadLetterCountQuery = {},
  where = 'count',
): DeadLetterFilter & Required<Pick<DeadLetterQuery, 'status'>> {
  const { limit: _limit, offset: _offset, ...checked } = deadLetterQuery(query, where)
  return checked
}

/**
 * Whether `letter` matches the filter and status of `query` (paging aside). For stores that filter in memory.
 *
 * @example
 * const found = letters.filter((letter) => deadLetterMatches(letter, query))
 */
export function deadLetterMatches(letter: DeadLetter, query: DeadLetterQuery): boolean {
  const status = query.status ?? 'parked'
  return (
    (status === 'all' || letter.status === status) &&
    (query.eventType === undefined || letter.eventType === query.eventType) &&
    (query.code === undefined || letter.code === query.code) &&
    (query.parkedAfter === undefined || letter.parkedAt.getTime() >= query.parkedAfter.getTime()) &&
    (query.parkedBefore === undefined || letter.parkedAt.getTime() < query.parkedBefore.getTime())
  )
}
