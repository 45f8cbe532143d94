import { cursorOf } from './query.js'
import type { Journal, JournalListQuery, JournalRecord } from './types.js'

const HOUR = 3_600_000
/** Answers written up to this far ahead of this clock (another instance's) are listed too, as the journals do. */
const AHEAD_MS = 60_000
/** How long one list by event type searches before answering what it found, with a cursor to search on. */
export const TYPE_SEARCH_MS = 500

/** What {@link listByHours} found, and where a list stopped short of its end resumes. */
export interface HoursPage {
  records: JournalRecord[]
  /** The cursor of the next page: after the last record of a full page, or where the search stopped. */
  cursor?: string
  /** Set when the search stopped before the page was full: answers before it are not searched yet. */
  searchedFrom?: number
}

/**
 * A list filtered by event type, which no journal indexes: asked an hour at a time, newest first, until the page is
 * full, the range ends, or {@link TYPE_SEARCH_MS} passed. So a type that matches nothing (a typo) costs a request at
 * most about half a second of the journal, not a walk of the whole retention; the page then holds what was found
 * and a cursor that resumes the search below the last hour searched.
 */
export async function listByHours(
  journal: Pick<Journal, 'list' | 'retentionMs'>,
  query: JournalListQuery,
  now = Date.now(),
): Promise<HoursPage> {
  const started = Date.now()
  const lowest = Math.max(query.from ?? Number.NEGATIVE_INFINITY, now - journal.retentionMs)
  let upper = Math.min(
    query.to ?? Number.POSITIVE_INFINITY,
    query.after === undefined ? Number.POSITIVE_INFINITY : query.after.at + 1,
    now + AHEAD_MS,
  )
  // A page stops for time only below the window it starts in, so it searches at least one whole hour: resuming from
  // `<hour>.0`, that window is a millisecond holding nothing, and a journal slower than the budget would make no progress.
  const firstWindow = Math.floor((upper - 1) / HOUR) * HOUR
  const records: JournalRecord[] = []
  while (upper > lowest) {
    const from = Math.max(lowest, Math.floor((upper - 1) / HOUR) * HOUR)
    records.push(...(await journal.list({ ...query, from, to: upper, limit: query.limit - records.length })))
    const last = records[records.length - 1]
    if (last !== undefined && records.length >= query.limit) return { records, cursor: cursorOf(last) }
    upper = from
    // Every id sorts after `0`: the cursor `<from>.0` resumes strictly below the hour just searched.
    if (upper > lowest && upper < firstWindow && Date.now() - started >= TYPE_SEARCH_MS) {
      return { records, cursor: `${upper}.0`, searchedFrom: upper }
    }
  }
  return { records }
}
