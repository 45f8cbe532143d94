import { InternalError, WebhookError } from '../errors/index.js'
import type { TraceCarrier } from '../telemetry/telemetry.js'
import type { VerifiedEvent, WebhookQueue, Webhooks } from '../types.js'
import { nonNegativeInteger, nonNegativeNumber, positiveInteger } from '../validations.js'

/** Options of {@link inProcessQueue}. */
export interface InProcessQueueOptions {
  /**
   * Events whose handlers run at once.
   * @default 4
   */
  concurrency?: number
  /**
   * Further runs after a failed one (a handler or the store threw). When they are used up the
   * failure is reported to `onError` and the event is dropped.
   * @default 3
   */
  retries?: number
  /**
   * Delay before the first retry; doubled for each further one.
   * @default 1000
   */
  backoffMs?: number
  /**
   * Most events held at once (waiting, running or waiting to retry). Beyond it `enqueue` rejects,
   * so the delivery is answered 503 and the service retries an hour later.
   * @default 10_000
   */
  maxPending?: number
}

/** The queue built by {@link inProcessQueue}. */
export interface InProcessQueue extends WebhookQueue {
  /** Events accepted and not finished yet (waiting, running or waiting to retry). */
  readonly pending: number
  /** Resolves once every accepted event has been handled or given up on. */
  drain(): Promise<void>
  /**
   * Stops accepting events (`enqueue` rejects), drops the events waiting to run or to retry, and
   * resolves once the running handlers have finished. Dropped events are lost.
   */
  close(): Promise<void>
}

/** Queues made by {@link inProcessQueue}: with a `memoryStore` they are the consistent one-process set-up. */
const inProcessQueues = new WeakSet<object>()

/** Whether `queue` was made by {@link inProcessQueue}. */
export function isInProcessQueue(queue: object): boolean {
  return inProcessQueues.has(queue)
}

interface Entry {
  event: VerifiedEvent
  /** Trace context of the delivery that enqueued it, handed to its dispatch. */
  trace: TraceCarrier | undefined
  /** Failed runs so far. */
  failures: number
  timer?: ReturnType<typeof setTimeout>
}

/**
 * Queue mode in memory, for development and tests: deliveries are answered 200 as soon as they are
 * verified, and the handlers run afterwards in this process, with retries.
 *
 * **Events are LOST ON A CRASH**: anything acknowledged but not yet handled lives only in this
 * process's memory, and the service does not resend an acknowledged event. Restarts, deploys and
 * crashes drop it. For production use `bullmqQueue` from `@payhooks/bullmq`, which stores each event
 * in Redis before acknowledging it.
 *
 * @example
 * const webhooks = createWebhooks({ secret, queue: inProcessQueue({ concurrency: 2 }) })
 * webhooks.on('transaction_settled', async (event) => slowLedger.credit(event.data))
 */
export function inProcessQueue(options: InProcessQueueOptions = {}): InProcessQueue {
  const where = 'inProcessQueue'
  const concurrency = positiveInteger(options.concurrency ?? 4, where, 'concurrency')
  const retries = nonNegativeInteger(options.retries ?? 3, where, 'retries')
  const backoffMs = nonNegativeNumber(options.backoffMs ?? 1000, where, 'backoffMs')
  const maxPending = positiveInteger(options.maxPending ?? 10_000, where, 'maxPending')

  let receiver: Pick<Webhooks<unknown>, 'dispatch' | 'report'> | undefined
  const pending = new Map<string, Entry>()
  const ready: Entry[] = []
  let running = 0
  let closed = false
  let scheduled = false
  let idle: { promise: Promise<void>; resolve: () => void } | undefined

  function settleIfIdle() {
    if (pending.size === 0 && running === 0 && idle) {
      idle.resolve()
      idle = undefined
    }
  }

  // Handlers start on a later turn of the event loop, after the acknowledgement has been written.
  function schedule() {
    if (scheduled) return
    scheduled = true
    setImmediate(() => {
      scheduled = false
      while (running < concurrency && ready.length > 0) void run(ready.shift() as Entry)
    })
  }

  function finish(entry: Entry, retryInMs: number | undefined) {
    if (retryInMs === undefined || closed) {
      pending.delete(entry.event.event_id)
      return
    }
    entry.timer = setTimeout(() => {
      entry.timer = undefined
      ready.push(entry)
      schedule()
    }, retryInMs)
  }

  async function run(entry: Entry) {
    running++
    let retryInMs: number | undefined
    try {
      const target = receiver as NonNullable<typeof receiver>
      const { event, trace } = entry
      const outcome = await (trace ? target.dispatch(event, { trace }) : target.dispatch(event))
      // Another process holds the claim (shared store): look again when its lease ends.
      if (outcome.status === 'in_progress') retryInMs = outcome.retryAfterMs ?? backoffMs
    } catch (error) {
      receiver?.report(error instanceof WebhookError ? error : new InternalError(error, entry.event))
      if (entry.failures < retries) retryInMs = backoffMs * 2 ** entry.failures
      entry.failures++
    }
    running--
    finish(entry, retryInMs)
    if (ready.length > 0) schedule()
    settleIfIdle()
  }

  function drain(): Promise<void> {
    if (pending.size === 0 && running === 0) return Promise.resolve()
    if (!idle) {
      let resolve!: () => void
      const promise = new Promise<void>((r) => {
        resolve = r
      })
      idle = { promise, resolve }
    }
    return idle.promise
  }

  const queue: InProcessQueue = {
    get pending() {
      return pending.size
    },
    attach(webhooks) {
      if (receiver && receiver !== webhooks) {
        throw new Error('inProcessQueue: already attached to another receiver; create one queue per receiver')
      }
      receiver = webhooks
    },
    async enqueue(event, options) {
      if (!receiver) throw new Error('inProcessQueue: not attached; pass it to createWebhooks({ queue })')
      if (closed) throw new Error('inProcessQueue: closed')
      if (pending.has(event.event_id)) return
      if (pending.size >= maxPending) throw new Error(`inProcessQueue: full (${maxPending} events pending)`)
      const entry: Entry = { event, trace: options?.trace, failures: 0 }
      pending.set(event.event_id, entry)
      ready.push(entry)
      schedule()
    },
    drain,
    async close() {
      closed = true
      for (const entry of ready) pending.delete(entry.event.event_id)
      ready.length = 0
      for (const [eventId, entry] of pending) {
        if (entry.timer === undefined) continue
        clearTimeout(entry.timer)
        pending.delete(eventId)
      }
      // What is left is running: each entry removes itself when it finishes.
      await drain()
    },
  }
  inProcessQueues.add(queue)
  return queue
}
