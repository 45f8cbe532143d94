export type { QueueConnection } from './connection.js'
export { jobIdFor } from './jobs.js'
export {
  type BullmqQueue,
  type BullmqQueueOptions,
  bullmqQueue,
  type DeadLetter,
  type JobRetention,
  type QueueCounts,
} from './queue.js'
export { type StartWorkerOptions, startWorker, type WebhookWorker } from './worker.js'
