import type {
  DeadLetter as CoreDeadLetter,
  EnqueueOptions,
  VerifiedEvent,
  WebhookError,
  WebhookQueue,
  Webhooks,
} from '@payhooks/core'
import { parseCreatedAt } from '@payhooks/core'
import { connectionDeadline } from '@payhooks/redis/connection'
import { type Job, type KeepJobs, Queue } from 'bullmq'
import { jobBatcher } from './batch.js'
import {
  closeBullmq,
  closeConnection,
  connectionErrorReporter,
  openConnection,
  type QueueConnection,
} from './connection.js'
import { DEFAULT_QUEUE_NAME, DEFAULT_QUEUE_PREFIX, eventIdOf, jobIdFor, splitJobData, TRACE_FIELD } from './jobs.js'
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

/**
 * An event whose handlers failed on every attempt, kept in BullMQ's failed set. It is also a dead letter of
 * `@payhooks/core` (see `bullmqDeadLetters`): `code` is `handler_failed`, `reason` the last failure, `parkedAt`
 * when it failed, and `body` the verified event as queued (JSON, UTF-8): the queue keeps the parsed event, not
 * the signed bytes, so `headers` is empty.
 */
export interface DeadLetter extends CoreDeadLetter {
  eventId: string
  eventType: string
  /** The verified event, as the handlers receive it. */
  event: VerifiedEvent
  /** Message of the last failure. */
  failedReason: string
  attemptsMade: number
  failedAt: Date | undefined
  /** BullMQ job id (see {@link jobIdFor}). */
  jobId: string
}

/** Jobs of the queue by state. */
export interface QueueCounts {
  waiting: number
  active: number
  delayed: number
  completed: number
  failed: number
}

/** A {@link WebhookQueue} on BullMQ, with dead-letter tools. Built by {@link bullmqQueue}. */
export interface BullmqQueue extends WebhookQueue {
  readonly name: string
  readonly prefix: string
  /**
   * Adds the event as a job whose id derives from its `event_id` (a job that exists already is left
   * as it is), with the delivery's trace context when the receiver has `telemetry`. Rejects within
   * `enqueueTimeoutMs` when Redis is down or slow. With `batch`, the job joins this turn's `addBulk`, and the
   * promise settles with it.
   */
  enqueue(event: VerifiedEvent, options?: EnqueueOptions): Promise<void>
  /**
   * Dead letters, newest first.
   *
   * @example
   * for (const letter of await queue.deadLetters({ limit: 20 })) {
   *   console.log(letter.eventId, letter.failedReason)
   * }
   */
  deadLetters(options?: { offset?: number; limit?: number }): Promise<DeadLetter[]>
  /**
   * The dead letter of `eventId`, or undefined when its job is not in the failed set.
   *
   * @example
   * const letter = await queue.deadLetter('evt_123')
   */
  deadLetter(eventId: string): Promise<DeadLetter | undefined>
  /**
   * Moves the dead letter of `eventId` back to the queue with its attempts reset. Resolves false
   * when there is no dead letter for it, also when a concurrent replay moved it back first.
   *
   * @example
   * await queue.replay('evt_123')
   */
  replay(eventId: string): Promise<boolean>
  /** Replays every dead letter; resolves with how many were moved back. */
  replayAll(): Promise<number>
  /** Jobs by state, for health checks and dashboards. */
  counts(): Promise<QueueCounts>
  /** Resolves once Redis is connected and the queue is ready. */
  ready(): Promise<void>
  /** Closes the queue and its connection. Later `enqueue` calls reject. */
  close(): Promise<void>
}

const DAY_MS = 24 * 60 * 60 * 1000
const ADMIN_READY_TIMEOUT_MS = 10_000

function keepJobs({ maxAgeMs, maxCount }: JobRetention): KeepJobs | false {
  if (maxAgeMs !== undefined) {
    const age = Math.ceil(maxAgeMs / 1000)
    return maxCount === undefined ? { age } : { age, count: maxCount }
  }
  return maxCount === undefined ? false : { count: maxCount }
}

const encoder = new TextEncoder()

function createdAtOf(event: VerifiedEvent | undefined): Date | undefined {
  const time = typeof event?.created_at === 'string' ? parseCreatedAt(event.created_at) : Number.NaN
  return Number.isNaN(time) ? undefined : new Date(time)
}

/**
 * Moves a failed job back to the queue; false when it left the failed set in between (replayed or removed by
 * another caller): BullMQ's reprocessJob script then fails with JobNotInState or JobNotExist, whose messages
 * are all that tells them apart. Any other failure is thrown.
 */
async function retryFailed(job: Job<VerifiedEvent>): Promise<boolean> {
  try {
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true })
    return true
  } catch (error) {
    const message = error instanceof Error ? error.message : ''
    const lost = [
      `Job ${job.id} is not in the failed state. reprocessJob`,
      `Missing key for job ${job.id}. reprocessJob`,
    ]
    if (lost.includes(message)) return false
    throw error
  }
}

function toDeadLetter(job: Job<VerifiedEvent>): DeadLetter {
  const event = job.data && splitJobData(job.data).event
  const failedAt = job.finishedOn ? new Date(job.finishedOn) : undefined
  const parkedAt = failedAt ?? new Date(job.timestamp)
  return {
    eventId: event?.event_id ?? eventIdOf(job.id) ?? '',
    eventType: event?.event_type ?? job.name,
    event,
    failedReason: job.failedReason,
    attemptsMade: job.attemptsMade,
    failedAt,
    jobId: job.id ?? '',
    body: encoder.encode(JSON.stringify(event ?? null)),
    headers: {},
    code: 'handler_failed',
    reason: job.failedReason ?? '',
    createdAt: createdAtOf(event),
    parkedAt,
    firstParkedAt: parkedAt,
    parkCount: 1,
    status: 'parked',
    replayedAt: undefined,
  }
}

/**
 * Durable queue mode on Redis: the receiver stores each verified event as a BullMQ job and answers
 * 200 at once; {@link startWorker} runs the handlers, here or in other processes. Retries use
 * exponential backoff; events whose attempts run out stay in BullMQ's failed set as dead letters.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { bullmqQueue, startWorker } from '@payhooks/bullmq'
 * import { redisStore } from '@payhooks/redis'
 * import { Redis } from 'ioredis'
 *
 * const redis = new Redis(process.env.REDIS_URL!)
 * const queue = bullmqQueue({ connection: redis })
 * const webhooks = createWebhooks({ secret, store: redisStore(redis), queue, leaseMs: 120_000 })
 * webhooks.on('transaction_settled', async (event) => ledger.credit(event.data))
 * const worker = startWorker(webhooks, { connection: redis })
 */
export function bullmqQueue(options: BullmqQueueOptions): BullmqQueue {
  const caller = 'bullmqQueue'
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

  let receiver: Pick<Webhooks<unknown>, 'report'> | undefined
  let closed = false
  // Offline queue off: while Redis is down a command fails instead of waiting to be replayed later.
  const client = openConnection(options.connection, { enableOfflineQueue: false })
  client.on(
    'error',
    connectionErrorReporter('queue connection', () =>
      receiver && !closed ? (e: WebhookError) => receiver?.report(e) : undefined,
    ),
  )
  const queue = new Queue<VerifiedEvent>(name, {
    connection: client,
    prefix,
    defaultJobOptions: {
      attempts,
      backoff: { type: 'exponential', delay: backoffMs },
      removeOnComplete,
      removeOnFail,
    },
  })
  // Connection errors are reported by the client listener; an 'error' without a listener would throw.
  queue.on('error', () => {})
  const enqueueDeadline = connectionDeadline(client, { timeoutMs, caller })
  const adminDeadline = connectionDeadline(client, { timeoutMs: ADMIN_READY_TIMEOUT_MS, caller })
  const batcher =
    batchSize === undefined
      ? undefined
      : jobBatcher(queue, batchSize, (addBulk) => enqueueDeadline.call(addBulk, 'Redis did not take the jobs'))

  /** Admin calls wait for the connection longer than an enqueue, and then as long as their work takes. */
  async function admin(): Promise<void> {
    if (closed) throw new Error(`${caller}: closed`)
    await adminDeadline.ready()
  }

  return {
    name,
    prefix,
    attach(webhooks) {
      receiver = webhooks
    },
    enqueue(event, enqueueOptions) {
      if (closed) return Promise.reject(new Error(`${caller}: closed`))
      const trace = enqueueOptions?.trace
      const data = trace ? { ...event, [TRACE_FIELD]: trace } : event
      const jobId = jobIdFor(event.event_id)
      if (batcher) return batcher.add({ name: event.event_type, data, jobId })
      const add = () => queue.add(event.event_type, data, { jobId })
      return enqueueDeadline.call(add, 'Redis did not take the job').then(() => {})
    },
    async deadLetters({ offset = 0, limit = 100 } = {}) {
      check.offset(offset, caller)
      check.positiveInteger(limit, 'limit', caller)
      await admin()
      const jobs = await queue.getFailed(offset, offset + limit - 1)
      return jobs.filter((job) => job !== undefined).map(toDeadLetter)
    },
    async deadLetter(eventId) {
      await admin()
      const job = await queue.getJob(jobIdFor(eventId))
      if (!job || !(await job.isFailed())) return undefined
      return toDeadLetter(job)
    },
    async replay(eventId) {
      await admin()
      const job = await queue.getJob(jobIdFor(eventId))
      if (!job || !(await job.isFailed())) return false
      return retryFailed(job)
    },
    async replayAll() {
      await admin()
      const ids = await queue.getRanges(['failed'], 0, -1)
      let replayed = 0
      for (const id of ids) {
        const job = await queue.getJob(id)
        if (job && (await job.isFailed()) && (await retryFailed(job))) replayed++
      }
      return replayed
    },
    async counts() {
      await admin()
      const counts = await queue.getJobCounts('waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed')
      return {
        waiting: (counts.waiting ?? 0) + (counts.prioritized ?? 0),
        active: counts.active ?? 0,
        delayed: counts.delayed ?? 0,
        completed: counts.completed ?? 0,
        failed: counts.failed ?? 0,
      }
    },
    async ready() {
      await admin()
      await queue.waitUntilReady()
    },
    async close() {
      if (closed) return
      closed = true
      await batcher?.flush()
      await closeBullmq(queue, () => queue.close())
      await closeConnection(client)
    },
  }
}
