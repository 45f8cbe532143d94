import { check, positiveInteger } from '../validations.js'
import { cursorOf, journalListQuery } from './query.js'
import type { JournalRecorder } from './recorder.js'
import type {
  EventListPage,
  Events,
  EventTimeline,
  FleetCounts,
  Journal,
  JournalAnswer,
  JournalGap,
  JournalListedAnswer,
  JournalRecord,
} from './types.js'
import { listByHours } from './windows.js'

const MINUTE = 60_000
/** The longest span `counts` reads: a day of minutes. */
const MAX_MINUTES = 1440
/** A read of the journal not answered by then rejects. */
export const READ_TIMEOUT_MS = 10_000
/** The most gaps a timeline lists. */
const MAX_GAPS = 50
/** Outcomes that mean the event was handled (or durably handed on). */
const HANDLED = new Set(['processed', 'queued', 'processed_late', 'queued_late', 'replay_processed'])

/** `work`, or a rejection naming `what` once {@link READ_TIMEOUT_MS} pass first. */
function bounded<T>(work: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`events.${what}: the journal did not answer within ${READ_TIMEOUT_MS} ms`)),
      READ_TIMEOUT_MS,
    )
    ;(timer as { unref?: () => void }).unref?.()
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/** A signed `created_at` as a Date, or null. */
function dateOf(createdAt: string | null): Date | null {
  const ms = createdAt === null ? Number.NaN : Date.parse(createdAt)
  return Number.isNaN(ms) ? null : new Date(ms)
}

const gapOf = (record: JournalRecord): JournalGap => ({
  from: new Date(record.at),
  to: new Date(record.at + record.durationMs),
  instance: record.instance,
  dropped: record.copies ?? 1,
})

/** The journal's gaps (answers an instance dropped) reaching past `from`, oldest first. */
async function gapsSince(journal: Journal, from: number): Promise<JournalGap[]> {
  // A gap starts at most a minute before its last drop: one starting a minute before `from` may reach past it.
  const records = await journal.list({ outcome: 'journal_gap', from: from - MINUTE, limit: MAX_GAPS })
  return records
    .filter((record) => record.at + record.durationMs >= from)
    .map(gapOf)
    .reverse()
}

function answerOf(record: JournalRecord): JournalAnswer {
  return {
    at: new Date(record.at),
    status: record.status,
    outcome: record.outcome,
    instance: record.instance,
    durationMs: record.durationMs,
    verifiedWith:
      record.secretLabel === undefined
        ? { index: record.secretIndex }
        : { index: record.secretIndex, label: record.secretLabel },
    copies: record.copies ?? 1,
  }
}

function listedOf(record: JournalRecord): JournalListedAnswer {
  return {
    ...answerOf(record),
    eventId: record.eventId,
    eventType: record.eventType,
    createdAt: record.createdAt,
    createdAtDate: dateOf(record.createdAt),
  }
}

/**
 * `webhooks.events`: reads of the journal, each after this instance's buffered answers are written (waiting for
 * them at most 3 s), each rejecting when the journal does not answer within {@link READ_TIMEOUT_MS}.
 */
export function eventsView(recorder: JournalRecorder | undefined): Events {
  async function journal() {
    check(recorder !== undefined, 'events', 'journal', 'be configured: createWebhooks({ journal })', TypeError)
    const active = recorder as JournalRecorder
    await active.flush()
    await active.init()
    return active.journal
  }
  const read = <T>(what: string, work: (journal: Journal) => Promise<T>) =>
    bounded(
      journal().then((ready) => work(ready)),
      what,
    )
  return {
    enabled: recorder !== undefined,
    retentionMs: recorder?.journal.retentionMs,
    async get(eventId: string): Promise<EventTimeline | undefined> {
      check(typeof eventId === 'string' && eventId !== '', 'events.get', 'eventId', 'be a string', TypeError)
      return read('get', async (ready) => {
        const records = await ready.answers(eventId)
        const [first] = records
        if (!first) return undefined
        const handled = records.find((record) => HANDLED.has(record.outcome))
        const createdAt = records.find((record) => record.createdAt !== null)?.createdAt ?? null
        const createdAtDate = dateOf(createdAt)
        const since = Math.min(first.at, createdAtDate?.getTime() ?? first.at)
        return {
          eventId,
          eventType: first.eventType,
          createdAt,
          createdAtDate,
          handledAt: handled ? new Date(handled.at) : null,
          answers: records.map(answerOf),
          gaps: await gapsSince(ready, since),
        }
      })
    },
    async list(query): Promise<EventListPage> {
      const normalized = journalListQuery(query)
      if (normalized.eventType !== undefined) {
        // No journal indexes event types: searched an hour at a time, within a bound (a type matching nothing).
        const { records, cursor, searchedFrom } = await read('list', (ready) => listByHours(ready, normalized))
        const answers = records.map(listedOf)
        if (cursor === undefined) return { answers }
        return searchedFrom === undefined
          ? { answers, cursor }
          : { answers, cursor, searchedFrom: new Date(searchedFrom) }
      }
      const records = await read('list', (ready) => ready.list(normalized))
      const last = records[records.length - 1]
      const answers = records.map(listedOf)
      return last && records.length === normalized.limit ? { answers, cursor: cursorOf(last) } : { answers }
    },
    async counts(options = {}): Promise<FleetCounts> {
      const minutes = positiveInteger(options.minutes ?? 60, 'events.counts', 'minutes')
      check(minutes <= MAX_MINUTES, 'events.counts', 'minutes', `be at most ${MAX_MINUTES}`)
      const now = Date.now()
      const to = now - (now % MINUTE) + MINUTE
      const from = to - minutes * MINUTE
      const rows = await read('counts', (ready) => ready.counts(from, to))
      const perMinute: Record<string, number>[] = Array.from({ length: minutes }, () => ({}))
      const total: Record<string, number> = {}
      for (const { minute, outcome, count } of rows) {
        const slot = perMinute[(minute - from) / MINUTE]
        // A `journal_dropped` record repeats, for one event, what its minute's `journal_gap` counts.
        if (!slot || count <= 0 || outcome === 'journal_dropped') continue
        slot[outcome] = (slot[outcome] ?? 0) + count
        total[outcome] = (total[outcome] ?? 0) + count
      }
      return { from: new Date(from), perMinute, total }
    },
    async flush() {
      await recorder?.flush()
    },
  }
}
