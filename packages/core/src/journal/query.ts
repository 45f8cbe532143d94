import { check, positiveInteger } from '../validations.js'
import type { EventListQuery, JournalListQuery, JournalRecord } from './types.js'

/** The longest `list` page. */
export const MAX_LIST_LIMIT = 1000
const CURSOR = /^(\d{1,16})\.([0-9a-z]{1,40})$/

/** The cursor after `record`: opaque to callers, `at.id` inside. */
export const cursorOf = (record: Pick<JournalRecord, 'at' | 'id'>): string => `${record.at}.${record.id}`

/** `query` checked, with its default limit (50), as a journal is asked it; a `TypeError`/`RangeError` naming `where`. */
export function journalListQuery(query: EventListQuery = {}, where = 'events.list'): JournalListQuery {
  for (const name of ['eventType', 'outcome'] as const) {
    const value = query[name]
    if (value !== undefined) check(typeof value === 'string' && value !== '', where, name, 'be a string', TypeError)
  }
  for (const name of ['from', 'to'] as const) {
    const date = query[name]
    if (date !== undefined) {
      check(date instanceof Date && !Number.isNaN(date.getTime()), where, name, 'be a valid Date', TypeError)
    }
  }
  const limit = positiveInteger(query.limit ?? 50, where, 'limit')
  check(limit <= MAX_LIST_LIMIT, where, 'limit', `be at most ${MAX_LIST_LIMIT}`)
  let after: JournalListQuery['after']
  if (query.cursor !== undefined) {
    const match = typeof query.cursor === 'string' ? CURSOR.exec(query.cursor) : null
    check(match !== null, where, 'cursor', 'be the cursor of a previous page', TypeError)
    after = { at: Number(match?.[1]), id: match?.[2] as string }
  }
  return {
    ...(query.eventType === undefined ? {} : { eventType: query.eventType }),
    ...(query.outcome === undefined ? {} : { outcome: query.outcome }),
    ...(query.from === undefined ? {} : { from: query.from.getTime() }),
    ...(query.to === undefined ? {} : { to: query.to.getTime() }),
    ...(after ? { after } : {}),
    limit,
  }
}

/** Whether `a` comes before `b` newest first: later `at`, then greater `id`. */
export const newerFirst = (a: JournalRecord, b: JournalRecord): number =>
  b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)

/** Whether `record` matches `query`'s filters and lies strictly past its cursor. For journals that filter in memory. */
export function journalMatches(record: JournalRecord, query: Omit<JournalListQuery, 'limit'>): boolean {
  const { after } = query
  return (
    (query.eventType === undefined || record.eventType === query.eventType) &&
    (query.outcome === undefined || record.outcome === query.outcome) &&
    (query.from === undefined || record.at >= query.from) &&
    (query.to === undefined || record.at < query.to) &&
    (after === undefined || record.at < after.at || (record.at === after.at && record.id < after.id))
  )
}
