export type { QueueConnection } from './connection.js'
export { bullmqDeadLetters } from './dead-letters.js'
export { jobIdFor } from './jobs.js'
export {
  type BullmqQueue,
  type BullmqQueueOptions,
  bullmqQueue,
  type DeadLetter,
  type QueueCounts,
} from './queue.js'
export type { EnqueueBatchOptions, JobRetention } from './types.js'
export { type StartWorkerOptions, startWorker, type WebhookWorker } from './worker.js'
