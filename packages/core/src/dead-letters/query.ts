import { check, nonNegativeInteger, positiveInteger } from '../validations.js'
import type { DeadLetter, DeadLetterCountQuery, DeadLetterFilter, DeadLetterQuery } from './types.js'

/** Where a letter stands in a listing: its `parkedAt` (ms) and `eventId`, what a keyset page continues from. */
export interface DeadLetterPosition {
  parkedAt: number
  eventId: string
}

/** A {@link DeadLetterQuery} with its defaults, checked; `after` decoded into `position`. */
export type NormalizedDeadLetterQuery = DeadLetterFilter &
  Required<Pick<DeadLetterQuery, 'status' | 'limit' | 'offset' | 'order'>> & { position?: DeadLetterPosition }

const STATUSES = ['parked', 'replayed', 'all']
const CODES = ['schema_mismatch', 'handler_failed', 'stale_event', 'paused']

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
  const { after, ...rest } = query
  const order = query.order ?? 'newest'
  check(order === 'newest' || order === 'oldest', where, 'order', "be 'newest' or 'oldest'", TypeError)
  const position = after === undefined ? undefined : deadLetterPosition(after, where)
  const status = query.status ?? 'parked'
  check(STATUSES.includes(status), where, 'status', "be 'parked', 'replayed' or 'all'", TypeError)
  if (query.code !== undefined) {
    check(
      CODES.includes(query.code),
      where,
      'code',
      "be 'schema_mismatch', 'handler_failed', 'stale_event' or 'paused'",
      TypeError,
    )
  }
  if (query.eventType !== undefined) {
    check(typeof query.eventType === 'string', where, 'eventType', 'be a string', TypeError)
  }
  for (const name of ['parkedAfter', 'parkedBefore', 'createdAfter', 'createdBefore'] as const) {
    const date = query[name]
    if (date !== undefined) {
      check(date instanceof Date && !Number.isNaN(date.getTime()), where, name, 'be a valid Date', TypeError)
    }
  }
  return {
    ...rest,
    status,
    order,
    limit: positiveInteger(query.limit ?? 100, where, 'limit'),
    offset: nonNegativeInteger(query.offset ?? 0, where, 'offset'),
    ...(position ? { position } : {}),
  }
}

/**
 * The keyset cursor of `letter` for {@link DeadLetterQuery.after}: the next page starts past it. Opaque text.
 *
 * @example
 * const next = await store.list({ limit: 50, after: deadLetterCursor(page[page.length - 1]) })
 */
export function deadLetterCursor(letter: Pick<DeadLetter, 'parkedAt' | 'eventId'> | DeadLetterPosition): string {
  const parkedAt = letter.parkedAt instanceof Date ? letter.parkedAt.getTime() : letter.parkedAt
  return toBase64Url(new TextEncoder().encode(JSON.stringify([parkedAt, letter.eventId])))
}

// btoa/atob rather than Buffer: core runs on web runtimes too.
function toBase64Url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '')
}

function fromBase64Url(text: string): Uint8Array {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) throw new TypeError('not base64url')
  const binary = atob(text.replaceAll('-', '+').replaceAll('_', '/'))
  return Uint8Array.from(binary, (char) => char.charCodeAt(0))
}

/** The position a {@link deadLetterCursor} names, or a `TypeError` naming `where` for anything else. */
export function deadLetterPosition(cursor: string, where = 'list'): DeadLetterPosition {
  let decoded: unknown
  try {
    decoded =
      typeof cursor === 'string'
        ? JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(fromBase64Url(cursor)))
        : undefined
  } catch {
    decoded = undefined
  }
  const [parkedAt, eventId] = Array.isArray(decoded) && decoded.length === 2 ? decoded : []
  check(
    Number.isSafeInteger(parkedAt) && parkedAt >= 0 && typeof eventId === 'string' && eventId !== '',
    where,
    'after',
    'be a cursor deadLetterCursor made',
    TypeError,
  )
  return { parkedAt: parkedAt as number, eventId: eventId as string }
}

/** Orders letters as a list does: newest first (`parkedAt`, then `eventId`, descending), or oldest first. */
export function compareDeadLetters(
  a: DeadLetterPosition,
  b: DeadLetterPosition,
  order: 'newest' | 'oldest' = 'newest',
): number {
  const ascending = a.parkedAt - b.parkedAt || (a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0)
  return order === 'newest' ? -ascending : ascending
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
  const {
    limit: _limit,
    offset: _offset,
    order: _order,
    position: _position,
    ...checked
  } = deadLetterQuery(query, where)
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
    (query.parkedBefore === undefined || letter.parkedAt.getTime() < query.parkedBefore.getTime()) &&
    createdWithin(letter.createdAt, query)
  )
}

/** Whether a letter's `createdAt` is within the filter's created window (none without one, when it has a window). */
export function createdWithin(
  createdAt: Date | undefined,
  { createdAfter, createdBefore }: Pick<DeadLetterFilter, 'createdAfter' | 'createdBefore'>,
): boolean {
  if (createdAfter === undefined && createdBefore === undefined) return true
  if (createdAt === undefined) return false
  const at = createdAt.getTime()
  return (
    (createdAfter === undefined || at >= createdAfter.getTime()) &&
    (createdBefore === undefined || at < createdBefore.getTime())
  )
}

/** Whether `filter` has a time window on `parkedAt` or on the event's `createdAt`. */
export const hasTimeWindow = (filter: DeadLetterFilter): boolean =>
  filter.parkedAfter !== undefined ||
  filter.parkedBefore !== undefined ||
  filter.createdAfter !== undefined ||
  filter.createdBefore !== undefined

/**
 * The page `query` asks for out of `letters` (filter, order, `after`, `offset`, `limit`), for stores that keep
 * their letters in memory.
 */
export function deadLetterPage<T extends DeadLetter>(letters: Iterable<T>, query: NormalizedDeadLetterQuery): T[] {
  const { order, position } = query
  const found: T[] = []
  for (const letter of letters) {
    if (!deadLetterMatches(letter, query)) continue
    if (position && compareDeadLetters(positionOf(letter), position, order) <= 0) continue
    found.push(letter)
  }
  found.sort((a, b) => compareDeadLetters(positionOf(a), positionOf(b), order))
  return found.slice(query.offset, query.offset + query.limit)
}

const positionOf = (letter: DeadLetter): DeadLetterPosition => ({
  parkedAt: letter.parkedAt.getTime(),
  eventId: letter.eventId,
})
