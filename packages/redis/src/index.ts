export {
  type BullmqQueue,
  type BullmqQueueOptions,
  bullmqQueue,
  type DeadLetter,
  type JobRetention,
  type QueueCounts,
} from './queue.js'
export { jobIdFor, type QueueConnection } from './queue-shared.js'
export { type RedisStoreOptions, redisStore } from './store.js'
export { type StartWorkerOptions, startWorker, type WebhookWorker } from './worker.js'
