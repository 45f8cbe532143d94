export { type Answered, type Gauges, Stats } from './stats.js'
export type {
  AnswerLatency,
  DeliveryCounts,
  ReceiverStats,
  RetryingEvent,
  RetryingEvents,
  SecretStats,
  SecretUsage,
} from './types.js'
