import type { Cluster, Redis } from 'ioredis'
import { holdWrites } from './coalesce.js'

/** Options of {@link connectionDeadline}. */
export interface ConnectionDeadlineOptions {
  /** Longest a call waits, for the connection to be ready plus the reply, before it rejects. A positive number. */
  timeoutMs: number
  /** Starts every error message, e.g. `'redisStore'`. */
  caller: string
  /**
   * Sends the calls made in one turn of the event loop in one write: the client's socket (a Cluster's, each node's)
   * is held corked until the turn ends (its check phase). With many calls in flight, Redis then reads, runs and
   * answers them at once, instead of waking for each: less CPU on both sides. Any other command sent on the client
   * in that turn goes in the same write. redisStore and redisJournal turn it on.
   * @default false
   */
  coalesceWrites?: boolean
}

/** Calls on one ioredis client, each settled within a deadline. Built by {@link connectionDeadline}. */
export interface ConnectionDeadline {
  /**
   * Runs `send` once the connection is ready and settles within `timeoutMs` of this call. While the
   * connection is down it waits for it, then rejects without having sent anything. A call sent but not
   * answered in time rejects with `` `${caller}: ${late} within ${timeoutMs} ms` `` and runs `abandon`
   * (its command may still run once Redis answers again).
   */
  call<T>(send: () => Promise<T>, late: string, abandon?: () => void): Promise<T>
  /** Resolves once the connection is ready; rejects after `timeoutMs`, or at once on a closed client. */
  ready(): Promise<void>
  /**
   * When Redis last refused a call for lack of memory (`OOM command not allowed`, under `maxmemory` with
   * `noeviction`), as `Date.now()`; `undefined` if never. Health reports a recent one as an error.
   */
  lastOomAt?(): number | undefined
}

/** Redis's refusal of a write once `used_memory` passed `maxmemory` under `noeviction`. */
const isOom = (error: unknown) => error instanceof Error && error.message.includes('OOM command not allowed')

interface Call {
  deadline: number
  settled: boolean
  go(): void
  expire(): void
}

const noop = () => {}
const resolved = () => Promise.resolve()

/**
 * The one "wait for the connection, then enforce a deadline" of payhooks' Redis packages: the dedupe
 * store's commands and the BullMQ queue's enqueue both go through it. Commands are never left in the
 * client's offline queue, where one could outlive its caller and be applied long after the receiver
 * answered 503; a `lazyConnect` client is connected on first use. All calls share one timer.
 *
 * @example
 * import { connectionDeadline } from '@payhooks/redis/connection'
 *
 * const deadline = connectionDeadline(redis, { timeoutMs: 1000, caller: 'myStore' })
 * const value = await deadline.call(() => redis.get('key'), 'GET got no reply from Redis')
 */
export function connectionDeadline(client: Redis | Cluster, options: ConnectionDeadlineOptions): ConnectionDeadline {
  const { timeoutMs, caller, coalesceWrites = false } = options

  let oomAt: number | undefined
  const waiting = new Set<() => void>()
  const onReady = () => {
    client.off('ready', onReady)
    const callbacks = [...waiting]
    waiting.clear()
    for (const callback of callbacks) callback()
  }
  const waitReady = (callback: () => void) => {
    if (waiting.size === 0) client.on('ready', onReady)
    waiting.add(callback)
    if (client.status === 'wait') client.connect().catch(noop)
  }
  const stopWaiting = (callback: () => void) => {
    if (waiting.delete(callback) && waiting.size === 0) client.off('ready', onReady)
  }

  // One timer for all calls instead of one per call: with a single timeout, deadlines come in the
  // order calls start, so the oldest unsettled call is the next to expire.
  const calls: Call[] = []
  let oldest = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  const dropSettled = () => {
    while (oldest < calls.length && calls[oldest]!.settled) oldest++
    if (oldest === calls.length) {
      calls.length = 0
      oldest = 0
    } else if (oldest >= 1024 && oldest * 2 >= calls.length) {
      calls.splice(0, oldest)
      oldest = 0
    }
  }
  const expire = () => {
    timer = undefined
    const now = performance.now()
    for (let next = calls[oldest]; next && next.deadline <= now; next = calls[oldest]) {
      if (!next.settled) next.expire()
      oldest++
    }
    dropSettled()
    if (oldest < calls.length) arm(calls[oldest]!.deadline - now)
  }
  const arm = (delay: number) => {
    timer = setTimeout(expire, delay)
    timer.unref?.()
  }

  function call<T>(send: () => Promise<T>, late: string, abandon?: () => void): Promise<T> {
    // 'end' means the client gave up reconnecting: no 'ready' will come.
    if (client.status === 'end') return Promise.reject(new Error(`${caller}: Redis connection closed`))
    return new Promise<T>((resolve, reject) => {
      let sent = false
      const entry: Call = {
        deadline: performance.now() + timeoutMs,
        settled: false,
        go() {
          if (entry.settled) return
          sent = true
          if (coalesceWrites) holdWrites(client)
          send().then(
            (value) => {
              if (settle()) resolve(value)
            },
            (error: unknown) => {
              if (isOom(error)) oomAt = Date.now()
              if (settle()) reject(error)
            },
          )
        },
        expire() {
          entry.settled = true
          if (sent) {
            reject(new Error(`${caller}: ${late} within ${timeoutMs} ms`))
            abandon?.()
          } else {
            stopWaiting(entry.go)
            reject(new Error(`${caller}: Redis connection not ready within ${timeoutMs} ms (${client.status})`))
          }
        },
      }
      const settle = () => {
        if (entry.settled) return false
        entry.settled = true
        if (calls[oldest] === entry) dropSettled()
        return true
      }
      calls.push(entry)
      if (!timer) arm(timeoutMs)
      if (client.status === 'ready') entry.go()
      else waitReady(entry.go)
    })
  }

  return { call, ready: () => call(resolved, 'connection check'), lastOomAt: () => oomAt }
}
