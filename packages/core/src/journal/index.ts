export { type MemoryJournalOptions, memoryJournal } from './memory.js'
export { cursorOf, journalListQuery, journalMatches, MAX_LIST_LIMIT, newerFirst } from './query.js'
export { defaultInstance, FLUSH_MS, JournalRecorder } from './recorder.js'
export { DEFAULT_JOURNAL_RETENTION_MS, journalRetention } from './retention.js'
export type {
  EventListPage,
  EventListQuery,
  Events,
  EventTimeline,
  FleetCounts,
  Journal,
  JournalAnswer,
  JournalGap,
  JournalListedAnswer,
  JournalListQuery,
  JournalMinute,
  JournalRecord,
  JournalSecret,
} from './types.js'
export { eventsView } from './view.js'
