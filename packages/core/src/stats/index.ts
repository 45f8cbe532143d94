export { type Answered, type Gauges, Stats } from './stats.js'
export type {
  AnswerLatency,
  DeliveryCounts,
  HungRun,
  HungRuns,
  ReceiverStats,
  RefusedRequests,
  RetryingEvent,
  RetryingEvents,
  SecretStats,
  SecretUsage,
} from './types.js'
