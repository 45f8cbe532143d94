import type { JournalRecord } from './types.js'

/** A record still being counted. */
export type Counter = { -readonly [K in keyof JournalRecord]: JournalRecord[K] }

/** `record` as a counter of `copies` (built field by field: a spread of it costs far more, per copy). */
export function counterOf(record: JournalRecord, copies: number): Counter {
  const counter: Counter = {
    id: record.id,
    at: record.at,
    eventId: record.eventId,
    eventType: record.eventType,
    createdAt: record.createdAt,
    status: record.status,
    outcome: record.outcome,
    instance: record.instance,
    durationMs: record.durationMs,
    secretIndex: record.secretIndex,
    copies,
  }
  if (record.secretLabel !== undefined) counter.secretLabel = record.secretLabel
  return counter
}

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
  /** Per event, its counters by outcome. */
  private readonly counters = new Map<string, Map<string, Counter>>()
  private counting = 0
  private timer: ReturnType<typeof setTimeout> | undefined = undefined

  /** `emit` takes the counters of a minute over (records to write). */
  constructor(private readonly emit: (records: JournalRecord[]) => void) {}

  /**
   * What becomes of an answer of `eventId` (`outcome`) at `at`: `'keep'` it as a record of its own, `'counted'` into
   * its counter of the minute (nothing more to do: no record is made), or `'count'`: make its record and
   * {@link start} a counter with it.
   */
  admit(eventId: string, outcome: string, at: number): 'keep' | 'counted' | 'count' {
    const minute = Math.floor(at / MINUTE)
    if (minute !== this.minute) {
      this.roll()
      this.minute = minute
    }
    const seen = this.seen.get(eventId)
    if (seen === undefined ? this.seen.size < MAX_TRACKED : seen < KEEP_COPIES) {
      this.seen.set(eventId, (seen ?? 0) + 1)
      return 'keep'
    }
    const counter = this.counters.get(eventId)?.get(outcome)
    if (!counter) return 'count'
    counter.copies = (counter.copies ?? 1) + 1
    return 'counted'
  }

  /** Starts the counter of `record`'s event and outcome for the minute, `record` its first copy. */
  start(record: JournalRecord): void {
    if (this.counting >= MAX_TRACKED) this.release()
    let byOutcome = this.counters.get(record.eventId)
    if (byOutcome === undefined) {
      byOutcome = new Map()
      this.counters.set(record.eventId, byOutcome)
    }
    byOutcome.set(record.outcome, counterOf(record, 1))
    this.counting++
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.roll(), (this.minute + 1) * MINUTE - Date.now() + 50)
      ;(this.timer as { unref?: () => void }).unref?.()
    }
  }

  /** Hands the counters on now (a read or `close()` wants them written); copies after this start new ones. */
  release(): void {
    if (this.counting === 0) return
    const records: JournalRecord[] = []
    for (const byOutcome of this.counters.values()) records.push(...byOutcome.values())
    this.counters.clear()
    this.counting = 0
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
