import { type Counter, counterOf } from './copies.js'
import type { JournalRecord } from './types.js'

const MINUTE = 60_000
/** Events whose dropped answers get a `journal_dropped` record of their own; past it, only the minute's gap says so. */
export const MAX_DROP_MARKERS = 1000
/** Minutes with a `journal_gap` record waiting; past it, the newest takes the drops of later minutes too. */
const MAX_GAPS = 10_080

/** The answers copies of an event stand for; they go first when the buffer is full. */
const COPY_OUTCOMES = new Set(['duplicate', 'in_progress', 'busy'])
/** Accounts of the event handled: they go last. */
const HANDLING = new Set(['processed', 'queued', 'processed_late', 'queued_late', 'replay_processed'])

/**
 * The order in which a full buffer drops records: the oldest copies first (`duplicate`, `in_progress`, `busy`, and
 * counters of them), then other answers that handled nothing, then those that did, then the `journal_dropped`
 * records (whose count goes into their minute's gap), then the gaps (taken back, never lost).
 */
export function dropClass(record: JournalRecord): number {
  const { outcome } = record
  if (outcome === 'journal_gap') return 4
  if (outcome === 'journal_dropped') return 3
  if (HANDLING.has(outcome)) return 2
  return COPY_OUTCOMES.has(outcome) ? 0 : 1
}

/**
 * What was dropped, kept as records to write once the journal takes writes again: per event a `journal_dropped`
 * record (how many of its answers, from when), and per minute a `journal_gap` record (event id `''`: how many
 * answers of any event, from `at` to `at + durationMs`), so a timeline or a search that finds nothing says answers
 * may be missing, and when.
 */
export class Losses {
  private readonly byEvent = new Map<string, Counter>()
  private readonly byMinute = new Map<number, Counter>()
  private lastMinute = Number.NEGATIVE_INFINITY
  /** Dropped since the last log line; and when the last one was. */
  unlogged = 0
  droppedAt = Number.NEGATIVE_INFINITY

  constructor(
    private readonly nextId: () => string,
    private readonly instance: string,
  ) {}

  /** Counts `record` (an answer, a counter or an account) as dropped. */
  drop(record: JournalRecord): void {
    const copies = record.copies ?? 1
    this.droppedAt = Date.now()
    // A dropped `journal_dropped` record's answers are counted already (its gap takes them); a gap is taken back.
    if (record.outcome !== 'journal_dropped' && record.outcome !== 'journal_gap') {
      this.unlogged += copies
      this.markEvent(record, copies)
    }
    this.markGap(record, copies)
  }

  private markEvent(record: JournalRecord, copies: number): void {
    const known = this.byEvent.get(record.eventId)
    if (known) {
      known.copies = (known.copies ?? 1) + copies
      return
    }
    if (this.byEvent.size >= MAX_DROP_MARKERS) return
    const marker = counterOf(record, copies)
    marker.id = this.nextId()
    marker.status = 0
    marker.outcome = 'journal_dropped'
    marker.instance = this.instance
    marker.durationMs = 0
    this.byEvent.set(record.eventId, marker)
  }

  private markGap(record: JournalRecord, copies: number): void {
    let minute = Math.floor(record.at / MINUTE)
    if (!this.byMinute.has(minute) && this.byMinute.size >= MAX_GAPS) minute = this.lastMinute
    const gap = this.byMinute.get(minute)
    const last = record.outcome === 'journal_gap' ? record.at + record.durationMs : record.at
    if (gap) {
      const end = Math.max(gap.at + gap.durationMs, last)
      gap.at = Math.min(gap.at, record.at)
      gap.durationMs = end - gap.at
      gap.copies = (gap.copies ?? 1) + copies
      return
    }
    this.lastMinute = Math.max(this.lastMinute, minute)
    this.byMinute.set(minute, {
      id: this.nextId(),
      at: record.at,
      eventId: '',
      eventType: '',
      createdAt: null,
      status: 0,
      outcome: 'journal_gap',
      instance: this.instance,
      durationMs: last - record.at,
      secretIndex: 0,
      copies,
    })
  }

  /** The records saying what was dropped, taken out to be written (after a write the journal took). */
  take(): JournalRecord[] {
    if (this.byMinute.size === 0 && this.byEvent.size === 0) return []
    const records = [...this.byMinute.values(), ...this.byEvent.values()]
    this.byMinute.clear()
    this.byEvent.clear()
    this.lastMinute = Number.NEGATIVE_INFINITY
    return records
  }

  /** Whether records saying what was dropped wait to be written. */
  get pending(): boolean {
    return this.byMinute.size > 0 || this.byEvent.size > 0
  }
}
