export { type MemoryDeadLetterStore, type MemoryDeadLetterStoreOptions, memoryDeadLetterStore } from './memory.js'
export {
  checkDeadLetterStore,
  LAST_TRIES_AFTER_MS,
  onLastTries,
  type ParkAnswer,
  type ParkState,
  park,
  readyDeadLetters,
} from './park.js'
export {
  compareDeadLetters,
  type DeadLetterPosition,
  deadLetterCountQuery,
  deadLetterCursor,
  deadLetterMatches,
  deadLetterPage,
  deadLetterPosition,
  deadLetterQuery,
  type NormalizedDeadLetterQuery,
} from './query.js'
export { deadLetterView, type Guard, type ReplayState, replay, replayAll } from './replay.js'
export { deadLetterReplayAll, REPLAY_CONCURRENCY, ReplayRunError, type ReplaySource } from './replay-all.js'
export type {
  DeadLetter,
  DeadLetterCode,
  DeadLetterCountQuery,
  DeadLetterFilter,
  DeadLetterQuery,
  DeadLetterStore,
  DeadLetters,
  ParkedEvent,
  ReplayBatch,
  ReplayBatchRequest,
  ReplayCounts,
  ReplayOutcome,
  ReplayReport,
} from './types.js'
