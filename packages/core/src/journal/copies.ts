import type { JournalRecord } from './types.js'

/** A record still being counted. */
export type Counter = { -readonly [K in keyof JournalRecord]: JournalRecord[K] }

const MINUTE = 60_000
/** Answers of one event kept as records of their own in a minute, before the rest are counted. */
export const KEEP_COPIES = 3
/** Events (and counters) followed in a minute; past it, answers of other events are counted at once. */
export const MAX_TRACKED = 10_000

/**
 * Bounds what copies of one event cost the journal. An instance keeps the first {@link KEEP_COPIES} answers of an
 * event in a minute as records of their own; the rest (a replayed capture answered `duplicate` 20,000 times, a
 * retry storm answered `in_progress` or `busy`) become one record per event and outcome for the minute, the first of
 * them with their number in `copies`, handed on once the minute is over, or when a read or `close()` flushes.
 * `processed` and `queued` answers never come here: each is the event's own, and the hot path's.
 */
export class Copies {
  private minute = Number.NaN
  private readonly seen = new Map<string, number>()
  private readonly counters = new Map<string, Counter>()
  private timer: ReturnType<typeof setTimeout> | undefined = undefined

  /** `emit` takes the counters of a minute over (records to write). */
  constructor(private readonly emit: (records: JournalRecord[]) => void) {}

  /** Whether `record` was counted instead of being kept as a record of its own. */
  counted(record: JournalRecord): boolean {
    const minute = Math.floor(record.at / MINUTE)
    if (minute !== this.minute) {
      this.roll()
      this.minute = minute
    }
    const seen = this.seen.get(record.eventId)
    if (seen === undefined ? this.seen.size < MAX_TRACKED : seen < KEEP_COPIES) {
      this.seen.set(record.eventId, (seen ?? 0) + 1)
      return false
    }
    const key = `${record.outcome} ${record.eventId}`
    const counter = this.counters.get(key)
    if (counter) {
      counter.copies = (counter.copies ?? 1) + 1
      return true
    }
    if (this.counters.size >= MAX_TRACKED) this.release()
    this.counters.set(key, { ...record, copies: 1 })
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.roll(), (minute + 1) * MINUTE - Date.now() + 50)
      ;(this.timer as { unref?: () => void }).unref?.()
    }
    return true
  }

  /** Hands the counters on now (a read or `close()` wants them written); copies after this start new ones. */
  release(): void {
    if (this.counters.size === 0) return
    const records = [...this.counters.values()]
    this.counters.clear()
    this.emit(records)
  }

  /** The minute is over: its counters are handed on, and the next minute counts afresh. */
  roll(): void {
    if (this.timer !== undefined) clearTimeout(this.timer)
    this.timer = undefined
    this.release()
    this.seen.clear()
  }
}
