import { positiveInteger } from '../validations.js'
import { journalMatches, newerFirst } from './query.js'
import { journalRetention } from './retention.js'
import type { Journal, JournalListQuery, JournalMinute, JournalRecord } from './types.js'

/** Options of {@link memoryJournal}. */
export interface MemoryJournalOptions {
  /**
   * How long an answer is kept.
   * @default 604_800_000 (7 days)
   */
  retentionMs?: number
  /**
   * The most answers kept; past it the oldest are forgotten first.
   * @default 100_000
   */
  maxRecords?: number
}

const MINUTE = 60_000

/**
 * A {@link Journal} in this process's memory: for tests and single-instance receivers (a restart forgets it, and
 * other processes never see it). Answers are kept in time order; reads walk from the newest.
 *
 * @example
 * import { createWebhooks, memoryJournal } from '@payhooks/core'
 *
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, journal: memoryJournal() })
 * const timeline = await webhooks.events.get('evt_123')
 */
export function memoryJournal(options: MemoryJournalOptions = {}): Journal {
  const retentionMs = journalRetention(options.retentionMs, 'memoryJournal')
  const maxRecords = positiveInteger(options.maxRecords ?? 100_000, 'memoryJournal', 'maxRecords')
  // Oldest first by (at, id); `first` skips the forgotten ones without shifting the array each time.
  let records: JournalRecord[] = []
  let first = 0
  const byEvent = new Map<string, JournalRecord[]>()
  // The ids held, so a batch written again keeps no record twice.
  const ids = new Set<string>()

  function forget(count: number): void {
    for (let i = first; i < first + count; i++) {
      const record = records[i] as JournalRecord
      ids.delete(record.id)
      const answers = byEvent.get(record.eventId)
      if (!answers) continue
      const at = answers.indexOf(record)
      if (at >= 0) answers.splice(at, 1)
      if (answers.length === 0) byEvent.delete(record.eventId)
    }
    first += count
    if (first > 1024 && first > records.length / 2) {
      records = records.slice(first)
      first = 0
    }
  }

  function expire(now: number): void {
    const oldest = now - retentionMs
    let count = 0
    while (first + count < records.length && (records[first + count] as JournalRecord).at < oldest) count++
    if (count > 0) forget(count)
  }

  function insert(list: JournalRecord[], record: JournalRecord, from = 0): void {
    let i = list.length
    // Answers arrive nearly in order: walk back from the end.
    while (i > from && newerFirst(list[i - 1] as JournalRecord, record) < 0) i--
    list.splice(i, 0, record)
  }

  return {
    retentionMs,
    async write(batch) {
      const now = Date.now()
      for (const record of batch) {
        if (record.at < now - retentionMs || ids.has(record.id)) continue
        ids.add(record.id)
        insert(records, record, first)
        const answers = byEvent.get(record.eventId)
        if (answers) insert(answers, record)
        else byEvent.set(record.eventId, [record])
      }
      const over = records.length - first - maxRecords
      if (over > 0) forget(over)
    },
    async answers(eventId) {
      expire(Date.now())
      return [...(byEvent.get(eventId) ?? [])]
    },
    async list(query: JournalListQuery) {
      expire(Date.now())
      const found: JournalRecord[] = []
      for (let i = records.length - 1; i >= first && found.length < query.limit; i--) {
        const record = records[i] as JournalRecord
        if (query.from !== undefined && record.at < query.from) break
        if (journalMatches(record, query)) found.push(record)
      }
      return found
    },
    async counts(from, to) {
      expire(Date.now())
      const counts = new Map<string, JournalMinute>()
      for (let i = records.length - 1; i >= first; i--) {
        const record = records[i] as JournalRecord
        if (record.at < from) break
        const minute = record.at - (record.at % MINUTE)
        if (minute >= to) continue
        const key = `${minute} ${record.outcome}`
        const known = counts.get(key)
        counts.set(key, { minute, outcome: record.outcome, count: (known?.count ?? 0) + (record.copies ?? 1) })
      }
      return [...counts.values()]
    },
  }
}
