// Letters as the page sees them. The signature header never leaves the server; the body goes out as bytes
// (base64) and as text, which the page only ever puts in text nodes.
import {
  type DeadLetter,
  type DeadLetterCode,
  type DeadLetterFilter,
  type DeadLetterQuery,
  deadLetterPosition,
} from '@payhooks/core'
import type { LetterSummary } from './types.js'

const CODES: readonly string[] = ['schema_mismatch', 'handler_failed', 'stale_event', 'paused']
const STATUSES: readonly string[] = ['parked', 'replayed', 'all']
const MAX_PAGE = 200

const HINTS: Record<DeadLetterCode, string> = {
  schema_mismatch:
    'The schema refused this event. Fix the schema (or the handler it feeds), deploy, then replay: the bytes are verified again.',
  handler_failed:
    'A handler failed on the service’s last tries. Fix the cause shown in the reason, then replay: handlers run once.',
  paused:
    'Its type was paused by an operator when it arrived: resuming the type replays it (or replay it now, once the type is resumed).',
  stale_event:
    'It arrived older than maxEventAgeMs and was not known as handled (a manual resend after a long outage). Check it was not handled elsewhere, then replay or delete.',
}

const iso = (date: Date | undefined) => (date ? date.toISOString() : null)

export function summary(letter: DeadLetter): LetterSummary {
  return {
    eventId: letter.eventId,
    eventType: letter.eventType,
    code: letter.code,
    reason: letter.reason,
    parkCount: letter.parkCount,
    status: letter.status,
    parkedAt: letter.parkedAt.toISOString(),
    firstParkedAt: letter.firstParkedAt.toISOString(),
    replayedAt: iso(letter.replayedAt),
    createdAt: iso(letter.createdAt),
    size: letter.body.byteLength,
  }
}

/** The whole letter: bytes as received (base64), their text when UTF-8, pretty JSON when JSON; no signature. */
export function whole(letter: DeadLetter) {
  let text: string | null = null
  let pretty: string | null = null
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(letter.body)
    pretty = JSON.stringify(JSON.parse(text), null, 2)
  } catch {
    // Not UTF-8, or not JSON: the raw view still has every byte.
  }
  return {
    ...summary(letter),
    hint: HINTS[letter.code] ?? '',
    contentType: letter.headers['content-type'] ?? null,
    body: { base64: Buffer.from(letter.body).toString('base64'), text, pretty },
  }
}

export class BadQuery extends Error {}

export function date(value: string | null, name: string): Date | undefined {
  if (value === null || value === '') return undefined
  const parsed = new Date(value)
  if (Number.isNaN(parsed.getTime())) throw new BadQuery(`${name} must be a date`)
  return parsed
}

/**
 * A filter from query parameters (`code`, `eventType`, `from` and `to`: when parked, `createdFrom` and `createdTo`:
 * the events' `created_at`) or a JSON body's fields of those names.
 */
export function filterFrom(get: (name: string) => string | null): DeadLetterFilter {
  const filter: DeadLetterFilter = {}
  const code = get('code')
  if (code) {
    if (!CODES.includes(code)) throw new BadQuery('unknown code')
    filter.code = code as DeadLetterCode
  }
  const eventType = get('eventType')
  if (eventType) filter.eventType = eventType
  const after = date(get('from'), 'from')
  if (after) filter.parkedAfter = after
  const before = date(get('to'), 'to')
  if (before) filter.parkedBefore = before
  const createdAfter = date(get('createdFrom'), 'createdFrom')
  if (createdAfter) filter.createdAfter = createdAfter
  const createdBefore = date(get('createdTo'), 'createdTo')
  if (createdBefore) filter.createdBefore = createdBefore
  return filter
}

/** A keyset cursor from the address (`after`: older than that letter, `before`: newer), checked. */
function cursor(value: string | null, name: string): string | undefined {
  if (value === null || value === '') return undefined
  try {
    deadLetterPosition(value)
  } catch {
    throw new BadQuery(`${name} must be a cursor a page answered`)
  }
  return value
}

/**
 * A page's query from its address: a filter, `status`, `limit`, and where it starts: `after` (the `older` cursor a
 * page answered: the letters past it), `before` (its `newer` cursor: the letters just ahead of it), or `offset`
 * (kept for callers of the API from before keyset paging; costs grow with it).
 */
export function queryFrom(
  params: URLSearchParams,
): DeadLetterQuery & { eventId?: string; before?: string; limit: number; offset: number } {
  const get = (name: string) => params.get(name)
  const status = get('status') || 'parked'
  if (!STATUSES.includes(status)) throw new BadQuery('unknown status')
  const limit = Number(get('limit') || 50)
  const offset = Number(get('offset') || 0)
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_PAGE) throw new BadQuery('limit must be 1 to 200')
  if (!Number.isSafeInteger(offset) || offset < 0) throw new BadQuery('offset must be a whole number')
  const after = cursor(get('after'), 'after')
  const before = cursor(get('before'), 'before')
  if (after && before) throw new BadQuery('give after or before, not both')
  const eventId = get('eventId') || undefined
  return {
    ...filterFrom(get),
    status: status as DeadLetterQuery['status'],
    limit,
    offset,
    ...(after ? { after } : {}),
    ...(before ? { before } : {}),
    eventId,
  }
}
