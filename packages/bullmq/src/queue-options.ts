import type { DefaultJobOptions, KeepJobs } from 'bullmq'
import type { QueueConnection } from './connection.js'
import { DEFAULT_QUEUE_NAME, DEFAULT_QUEUE_PREFIX } from './jobs.js'
import type { EnqueueBatchOptions, JobRetention } from './types.js'
import * as check from './validations.js'

/** Options of {@link bullmqQueue}. */
export interface BullmqQueueOptions {
  /** Redis: a `redis://` URL, ioredis options, or an ioredis client (duplicated, never used directly). */
  connection: QueueConnection
  /**
   * BullMQ queue name; workers must use the same one.
   * @default 'payhooks'
   */
  name?: string
  /**
   * BullMQ key prefix; workers must use the same one. Keep it apart from the dedupe store's
   * `keyPrefix`, which owns every key under its own prefix.
   * @default 'bull'
   */
  prefix?: string
  /**
   * Runs of the handlers per event before it becomes a dead letter (first run included).
   * @default 8
   */
  attempts?: number
  /**
   * Delay before the first retry of a failed run; doubled for each further one (5 s, 10 s, 20 s …,
   * so 8 attempts span about 10 minutes).
   * @default 5000
   */
  backoffMs?: number
  /**
   * How long `enqueue` may take, waiting for the connection included, before it rejects and the
   * delivery is answered 503. Keep it well below the receiver's `deadlineMs`.
   * @default 2000
   */
  enqueueTimeoutMs?: number
  /**
   * Completed jobs kept. While a job is kept, a redelivery of its event is not enqueued again; after
   * that, the dedupe store's done marker stops a second run.
   * @default { maxAgeMs: 86_400_000, maxCount: 10_000 } (one day, at most 10 000)
   */
  keepCompleted?: JobRetention
  /**
   * Dead letters (jobs that used all their attempts) kept for {@link BullmqQueue.deadLetters} and
   * {@link BullmqQueue.replay}. Dropping one loses its event for good.
   * @default { maxAgeMs: 2_592_000_000 } (30 days)
   */
  keepDeadLetters?: JobRetention
  /**
   * Batched enqueue: the deliveries verified in one turn of the event loop are sent to Redis together, with
   * one BullMQ `addBulk` (one pipeline for all their jobs instead of one command each), which saves a little of
   * BullMQ's client work per job; early deliveries of a burst wait for their batch, so its median latency rises.
   * Each delivery is still answered only once Redis has taken its batch. The
   * trade-off: a batch fails as a whole, so when `addBulk` fails (Redis down, a timeout, one job refused)
   * every delivery in it is answered 503 and retried by the service, even those whose job Redis took
   * (the retry then finds the job and is answered 200). `true` uses the defaults of {@link EnqueueBatchOptions}.
   *
   * @example
   * const queue = bullmqQueue({ connection: redis, batch: { maxSize: 200 } })
   * @default false
   */
  batch?: boolean | EnqueueBatchOptions
}

const DAY_MS = 24 * 60 * 60 * 1000

function keepJobs({ maxAgeMs, maxCount }: JobRetention): KeepJobs | false {
  if (maxAgeMs !== undefined) {
    const age = Math.ceil(maxAgeMs / 1000)
    return maxCount === undefined ? { age } : { age, count: maxCount }
  }
  return maxCount === undefined ? false : { count: maxCount }
}

/** {@link BullmqQueueOptions} checked, with their defaults, in BullMQ's terms (its queue's `defaultJobOptions`). */
export function queueSettings(options: BullmqQueueOptions, caller: string) {
  check.connection(options.connection, caller)
  const attempts = check.positiveInteger(options.attempts ?? 8, 'attempts', caller)
  const backoffMs = check.positiveMs(options.backoffMs ?? 5000, 'backoffMs', caller)
  const timeoutMs = check.positiveMs(options.enqueueTimeoutMs ?? 2000, 'enqueueTimeoutMs', caller)
  const keepCompleted = options.keepCompleted ?? { maxAgeMs: DAY_MS, maxCount: 10_000 }
  const removeOnComplete = keepJobs(check.retention(keepCompleted, 'keepCompleted', caller))
  const keepDeadLetters = options.keepDeadLetters ?? { maxAgeMs: 30 * DAY_MS }
  const removeOnFail = keepJobs(check.retention(keepDeadLetters, 'keepDeadLetters', caller))
  const name = check.queueName(options.name ?? DEFAULT_QUEUE_NAME, caller)
  const prefix = check.queuePrefix(options.prefix ?? DEFAULT_QUEUE_PREFIX, caller)
  const batchSize = check.batch(options.batch ?? false, caller)
  const defaultJobOptions = {
    attempts,
    backoff: { type: 'exponential', delay: backoffMs },
    removeOnComplete,
    removeOnFail,
  } satisfies DefaultJobOptions
  return { name, prefix, timeoutMs, batchSize, defaultJobOptions }
}
