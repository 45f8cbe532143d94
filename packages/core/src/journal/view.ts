import { check, positiveInteger } from '../validations.js'
import { cursorOf, journalListQuery } from './query.js'
import type { JournalRecorder } from './recorder.js'
import type {
  EventListPage,
  Events,
  EventTimeline,
  FleetCounts,
  JournalAnswer,
  JournalListedAnswer,
  JournalRecord,
} from './types.js'
import { listByHours } from './windows.js'

const MINUTE = 60_000
/** The longest span `counts` reads: a day of minutes. */
const MAX_MINUTES = 1440
/** Outcomes that mean the event was handled (or durably handed on). */
const HANDLED = new Set(['processed', 'queued'])

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
  }
}

function listedOf(record: JournalRecord): JournalListedAnswer {
  return { ...answerOf(record), eventId: record.eventId, eventType: record.eventType, createdAt: record.createdAt }
}

/** `webhooks.events`: reads of the journal, each after this instance's buffered answers are written. */
export function eventsView(recorder: JournalRecorder | undefined): Events {
  async function journal() {
    check(recorder !== undefined, 'events', 'journal', 'be configured: createWebhooks({ journal })', TypeError)
    const active = recorder as JournalRecorder
    await active.flush()
    await active.init()
    return active.journal
  }
  return {
    enabled: recorder !== undefined,
    retentionMs: recorder?.journal.retentionMs,
    async get(eventId: string): Promise<EventTimeline | undefined> {
      check(typeof eventId === 'string' && eventId !== '', 'events.get', 'eventId', 'be a string', TypeError)
      const records = await (await journal()).answers(eventId)
      const [first] = records
      if (!first) return undefined
      const handled = records.find((record) => HANDLED.has(record.outcome))
      return {
        eventId,
        eventType: first.eventType,
        createdAt: records.find((record) => record.createdAt !== null)?.createdAt ?? null,
        handledAt: handled ? new Date(handled.at) : null,
        answers: records.map(answerOf),
      }
    },
    async list(query): Promise<EventListPage> {
      const normalized = journalListQuery(query)
      const active = await journal()
      if (normalized.eventType !== undefined) {
        // No journal indexes event types: searched an hour at a time, within a bound (a type matching nothing).
        const { records, cursor, searchedFrom } = await listByHours(active, normalized)
        const answers = records.map(listedOf)
        if (cursor === undefined) return { answers }
        return searchedFrom === undefined
          ? { answers, cursor }
          : { answers, cursor, searchedFrom: new Date(searchedFrom) }
      }
      const records = await active.list(normalized)
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
      const rows = await (await journal()).counts(from, to)
      const perMinute: Record<string, number>[] = Array.from({ length: minutes }, () => ({}))
      const total: Record<string, number> = {}
      for (const { minute, outcome, count } of rows) {
        const slot = perMinute[(minute - from) / MINUTE]
        if (!slot || count <= 0) continue
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
