export { type Answered, type Gauges, Stats } from './stats.js'
export type {
  AnswerLatency,
  DeliveryCounts,
  HungRun,
  HungRuns,
  OverrunningRun,
  OverrunningRuns,
  QuarantinedType,
  ReceiverStats,
  RefusedRequests,
  RetryingEvent,
  RetryingEvents,
  SecretStats,
  SecretUsage,
} from './types.js'
