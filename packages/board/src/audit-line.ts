// The log line of an audited replay or delete: one line, whatever the batch, with counts and the run's filter; the
// ids themselves go to `onAudit`, which gets every one.
import type { DeadLetterFilter } from '@payhooks/core'
import type { BoardAuditEntry } from './types.js'

// Control characters and the Unicode line separators: what could split the line (an actor's name, a typed type).
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching them is the point
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g
const oneLine = (text: string) =>
  text.replace(UNSAFE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)

/** `code=handler_failed eventType=… parkedAfter=… parkedBefore=…`, or `all` for no filter. */
export function filterText(filter: DeadLetterFilter | undefined): string | undefined {
  if (filter === undefined) return undefined
  const parts: string[] = []
  if (filter.code !== undefined) parts.push(`code=${filter.code}`)
  if (filter.eventType !== undefined) parts.push(`eventType=${filter.eventType}`)
  if (filter.parkedAfter !== undefined) parts.push(`parkedAfter=${filter.parkedAfter.toISOString()}`)
  if (filter.parkedBefore !== undefined) parts.push(`parkedBefore=${filter.parkedBefore.toISOString()}`)
  return oneLine(parts.length === 0 ? 'all' : parts.join(' '))
}

/** The fields and the one-line message of `entry`: counts by outcome, first and last id, the run's filter. */
export function auditLine(entry: BoardAuditEntry): { fields: Record<string, unknown>; message: string } {
  if (entry.action === 'pause' || entry.action === 'resume') return pauseLine(entry)
  const ids = entry.outcomes?.map((outcome) => outcome.eventId) ?? entry.deleted ?? []
  const counts: Record<string, number> = {}
  for (const outcome of entry.outcomes ?? []) counts[outcome.status] = (counts[outcome.status] ?? 0) + 1
  if (entry.action === 'delete') {
    counts.deleted = entry.deleted?.length ?? 0
    if (entry.notFound?.length) counts.not_found = entry.notFound.length
  }
  const all = entry.outcomes?.length ?? (entry.deleted?.length ?? 0) + (entry.notFound?.length ?? 0)
  const filter = filterText(entry.filter)
  const actor = entry.actor === undefined ? undefined : oneLine(entry.actor)
  const fields: Record<string, unknown> = { code: `board_${entry.action}`, actor, count: all, ...counts }
  const first = ids[0]
  if (first !== undefined) fields.first_event_id = oneLine(first)
  if (ids.length > 1) fields.last_event_id = oneLine(ids[ids.length - 1] as string)
  if (filter !== undefined) fields.filter = filter
  const tally = Object.entries(counts)
    .map(([status, count]) => `${count} ${status.replace('_', ' ')}`)
    .join(', ')
  const message =
    `payhooks board: ${entry.action.replace('_', ' ')} of ${all} dead letter(s) by ${actor ?? 'unknown'}` +
    `${tally ? `: ${tally}` : ''}${filter === undefined ? '' : `; filter ${filter}`}`
  return { fields, message }
}

/** The line of a pause or resume: the type, the reason, and after a resume what its replay did. */
function pauseLine(entry: BoardAuditEntry): { fields: Record<string, unknown>; message: string } {
  const actor = entry.actor === undefined ? undefined : oneLine(entry.actor)
  const eventType = oneLine(entry.eventType ?? '')
  const fields: Record<string, unknown> = { code: `board_${entry.action}`, actor, event_type: eventType }
  if (entry.reason) fields.reason = oneLine(entry.reason)
  if (entry.report) Object.assign(fields, entry.report)
  const report = entry.report
    ? `; replayed ${entry.report.processed} of ${entry.report.tried}, ${entry.report.failed} failed`
    : ''
  const reason = entry.reason ? ` (${oneLine(entry.reason)})` : ''
  return {
    fields,
    message: `payhooks board: ${entry.action} of ${eventType} by ${actor ?? 'unknown'}${reason}${report}`,
  }
}
