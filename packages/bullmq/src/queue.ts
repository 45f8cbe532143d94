import type { EnqueueOptions, VerifiedEvent, WebhookError, WebhookQueue, Webhooks } from '@payhooks/core'
import { connectionDeadline } from '@payhooks/redis/connection'
import { redisHealth } from '@payhooks/redis/health'
import { Queue } from 'bullmq'
import { jobBatcher } from './batch.js'
import { closeBullmq, closeConnection, connectionErrorReporter, openConnection } from './connection.js'
import { type DeadLetter, retryFailed, toDeadLetter } from './failed-jobs.js'
import { jobIdFor, TRACE_FIELD } from './jobs.js'
import { type BullmqQueueOptions, queueSettings } from './queue-options.js'
import * as check from './validations.js'

/** Jobs of the queue by state. */
export interface QueueCounts {
  waiting: number
  active: number
  delayed: number
  completed: number
  failed: number
}

/** When dead letters failed: at or after `parkedAfter`, before `parkedBefore`. */
export interface DeadLetterWindow {
  parkedAfter?: Date | undefined
  parkedBefore?: Date | undefined
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
   * Dead letters, newest first; with `parkedAfter` (inclusive) or `parkedBefore` (exclusive), only those that
   * failed within that window, read by rank from BullMQ's failed set (scored by the time each failed), so a page
   * costs the same however deep or narrow.
   *
   * @example
   * for (const letter of await queue.deadLetters({ limit: 20 })) {
   *   console.log(letter.eventId, letter.failedReason)
   * }
   */
  deadLetters(options?: DeadLetterWindow & { offset?: number; limit?: number }): Promise<DeadLetter[]>
  /**
   * How many dead letters failed within the window (all without one): one ZCOUNT of the failed set.
   *
   * @example
   * const lastHour = await queue.countDeadLetters({ parkedAfter: new Date(Date.now() - 3_600_000) })
   */
  countDeadLetters(options?: DeadLetterWindow): Promise<number>
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

const ADMIN_READY_TIMEOUT_MS = 10_000

const scoreOf = (date: Date | undefined, none: string) => (date === undefined ? none : String(date.getTime()))

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
  const { name, prefix, timeoutMs, batchSize, defaultJobOptions } = queueSettings(options, caller)

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
  const queue = new Queue<VerifiedEvent>(name, { connection: client, prefix, defaultJobOptions })
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
    // BullMQ needs noeviction: an evicted job is an event acknowledged and never run.
    health: () =>
      redisHealth(
        client,
        enqueueDeadline,
        'bullmq_redis',
        'the BullMQ queue',
        'BullMQ requires noeviction: a job evicted is an event answered 200 and never run',
      ),
    enqueue(event, enqueueOptions) {
      if (closed) return Promise.reject(new Error(`${caller}: closed`))
      const trace = enqueueOptions?.trace
      const data = trace ? { ...event, [TRACE_FIELD]: trace } : event
      const jobId = jobIdFor(event.event_id)
      if (batcher) return batcher.add({ name: event.event_type, data, jobId })
      const add = () => queue.add(event.event_type, data, { jobId })
      return enqueueDeadline.call(add, 'Redis did not take the job').then(() => {})
    },
    async deadLetters({ offset = 0, limit = 100, parkedAfter, parkedBefore } = {}) {
      check.offset(offset, caller)
      check.positiveInteger(limit, 'limit', caller)
      await admin()
      let first = 0
      let end = Number.POSITIVE_INFINITY
      if (parkedAfter !== undefined || parkedBefore !== undefined) {
        // Ranks in the failed set, newest first: those that failed at or after parkedBefore come before the window.
        const failed = queue.keys.failed as string
        const [newer, within] = await Promise.all([
          parkedBefore === undefined ? 0 : client.zcount(failed, parkedBefore.getTime(), '+inf'),
          client.zcount(failed, scoreOf(parkedAfter, '-inf'), parkedBefore ? `(${parkedBefore.getTime()}` : '+inf'),
        ])
        first = newer
        end = within
      }
      if (offset >= end) return []
      const jobs = await queue.getFailed(first + offset, first + Math.min(offset + limit, end) - 1)
      return jobs.filter((job) => job !== undefined).map(toDeadLetter)
    },
    async countDeadLetters({ parkedAfter, parkedBefore } = {}) {
      await admin()
      const max = parkedBefore ? `(${parkedBefore.getTime()}` : '+inf'
      return client.zcount(queue.keys.failed as string, scoreOf(parkedAfter, '-inf'), max)
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
