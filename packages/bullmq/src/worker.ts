import {
  type DispatchOutcome,
  InternalError,
  isQueuedEvent,
  type VerifiedEvent,
  WebhookError,
  type Webhooks,
} from '@payhooks/core'
import { DelayedError, type Job, UnrecoverableError, Worker } from 'bullmq'
import {
  closeBullmq,
  closeConnection,
  connectionErrorReporter,
  openConnection,
  type QueueConnection,
} from './connection.js'
import { DEFAULT_QUEUE_NAME, DEFAULT_QUEUE_PREFIX, eventIdOf, splitJobData } from './jobs.js'
import { keyWaiters, noop } from './key-waiters.js'
import * as check from './validations.js'

/** Options of {@link startWorker}. */
export interface StartWorkerOptions {
  /** Redis: a `redis://` URL, ioredis options, or an ioredis client (duplicated, never used directly). */
  connection: QueueConnection
  /**
   * BullMQ queue name, as given to {@link bullmqQueue}.
   * @default 'payhooks'
   */
  name?: string
  /**
   * BullMQ key prefix, as given to {@link bullmqQueue}.
   * @default 'bull'
   */
  prefix?: string
  /**
   * Events this worker handles at once.
   * @default 10
   */
  concurrency?: number
  /**
   * How long the worker's lock on a running job lasts; it is renewed every half of it while the
   * process is alive. A crashed worker's job is taken over once its lock has expired.
   * @default 30_000
   */
  lockDurationMs?: number
  /**
   * How often the worker looks for jobs whose lock expired (their worker died) and puts them back
   * in the queue. A lost job is found within one to two intervals after its lock expires.
   * @default 15_000
   */
  stalledIntervalMs?: number
  /**
   * Times a job may be lost with its worker and re-queued; one more and it becomes a dead letter
   * (so an event that crashes every worker cannot take the fleet down in a loop).
   * @default 2
   */
  maxStalledCount?: number
}

/** A running worker, built by {@link startWorker}. */
export interface WebhookWorker {
  /** Resolves once the worker is connected and taking jobs; rejects once it was closed. */
  ready(): Promise<void>
  /**
   * Stops taking jobs, waits for the running ones and closes the connections. With `force`, running
   * jobs are not awaited: their locks expire and other workers take them over.
   */
  close(force?: boolean): Promise<void>
}

/** Margin past the other holder's lease, so the retry finds it expired. */
const LEASE_MARGIN_MS = 250
/** When the store does not say how long the other holder's lease still runs. */
const IN_PROGRESS_DELAY_MS = 5000

/**
 * Runs the handlers of queued events: a BullMQ worker whose jobs go through `webhooks.dispatch`, so
 * the dedupe store's claim and done marker hold across receivers and workers. A failed run is
 * reported to `onError` and retried with the queue's backoff; when its attempts run out the event
 * stays in the failed set as a dead letter. An event another process is handling is put back until
 * that holder's lease ends, without using an attempt.
 *
 * Start it in the receiver process, or in as many other processes as you like, each with a
 * `createWebhooks` instance carrying the same handlers and a shared `redisStore`.
 *
 * @example
 * const webhooks = createWebhooks({ secret, store: redisStore(redis), leaseMs: 120_000 })
 * webhooks.on('transaction_settled', async (event) => ledger.credit(event.data))
 * const worker = startWorker(webhooks, { connection: process.env.REDIS_URL!, concurrency: 20 })
 * process.on('SIGTERM', () => worker.close())
 */
export function startWorker(
  webhooks: Pick<Webhooks<unknown>, 'dispatch' | 'report'>,
  options: StartWorkerOptions,
): WebhookWorker {
  const caller = 'startWorker'
  check.receiver(webhooks, caller)
  check.connection(options.connection, caller)
  const name = options.name ?? DEFAULT_QUEUE_NAME
  const prefix = options.prefix ?? DEFAULT_QUEUE_PREFIX
  const concurrency = check.positiveInteger(options.concurrency ?? 10, 'concurrency', caller)
  const lockDuration = check.positiveMs(options.lockDurationMs ?? 30_000, 'lockDurationMs', caller)
  const stalledInterval = check.positiveMs(options.stalledIntervalMs ?? 15_000, 'stalledIntervalMs', caller)
  const maxStalledCount = check.positiveInteger(options.maxStalledCount ?? 2, 'maxStalledCount', caller)

  const report = (error: WebhookError) => webhooks.report(error)
  // BullMQ's workers wait on blocking commands: their connections must retry forever.
  const client = openConnection(options.connection, { maxRetriesPerRequest: null })
  let closing = false
  // What closing the worker makes its connections say ("Connection is closed.") is not a Redis problem.
  const reportUnlessClosing = () => (closing ? undefined : report)
  client.on('error', connectionErrorReporter('worker connection', reportUnlessClosing))

  async function processJob(job: Job<VerifiedEvent>, token?: string): Promise<DispatchOutcome['status']> {
    if (!isQueuedEvent(job.data)) throw new UnrecoverableError('job data is not a payhooks event')
    const { event, trace } = splitJobData(job.data)
    let orderingKey: string | undefined
    const onOrderingKey = (key: string) => {
      orderingKey = key
    }
    let outcome: DispatchOutcome
    try {
      // The trace context queued with the event lets the receiver's telemetry link this run to its delivery.
      outcome = await webhooks.dispatch(event, trace ? { trace, onOrderingKey } : { onOrderingKey })
    } catch (error) {
      if (orderingKey !== undefined) waiting.handOn(orderingKey)
      report(error instanceof WebhookError ? error : new InternalError(error, event))
      throw error
    }
    if (outcome.status === 'in_progress') {
      const delay = (outcome.retryAfterMs ?? IN_PROGRESS_DELAY_MS) + LEASE_MARGIN_MS
      await job.moveToDelayed(Date.now() + delay, token)
      // Waiting for its ordering key: the holder's worker promotes it as soon as the holder's run ends.
      if (outcome.orderingKey !== undefined && job.id !== undefined) {
        await waiting.add(outcome.orderingKey, job.id, delay).catch(noop)
      }
      throw new DelayedError()
    }
    if (orderingKey !== undefined) waiting.handOn(orderingKey)
    return outcome.status
  }
  const worker = new Worker<VerifiedEvent, DispatchOutcome['status']>(name, processJob, {
    connection: client,
    prefix,
    concurrency,
    lockDuration,
    stalledInterval,
    maxStalledCount,
  })
  const waiting = keyWaiters(client, worker, `${prefix}:${name}:ordering-waiters:`)
  worker.on('error', connectionErrorReporter('worker', reportUnlessClosing))
  worker.on('stalled', (jobId) => {
    const eventId = eventIdOf(jobId) ?? jobId
    report(
      new InternalError(
        new Error(
          `event ${eventId} lost its worker mid-run (crash, or event loop blocked past lockDurationMs): re-queued, or dead-lettered once lost more than ${maxStalledCount} times`,
        ),
      ),
    )
  })

  return {
    async ready() {
      if (closing) throw new Error(`${caller}: closed`)
      await worker.waitUntilReady()
    },
    async close(force = false) {
      if (closing) return
      closing = true
      waiting.stop()
      await closeBullmq(worker, () => worker.close(force))
      await closeConnection(client)
    },
  }
}
