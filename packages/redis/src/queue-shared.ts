import { Buffer } from 'node:buffer'
import { StoreError, type WebhookError } from '@payhooks/core'
import { Redis, type RedisOptions } from 'ioredis'

/**
 * How the queue and its workers reach Redis: a `redis://` URL, ioredis options, or an ioredis client.
 * A client is never used directly: each queue or worker opens its own connection with
 * `client.duplicate()` (a queue's needs `enableOfflineQueue: false`, a worker's
 * `maxRetriesPerRequest: null`) and closes it on `close()`.
 */
export type QueueConnection = string | Redis | RedisOptions

/** Default BullMQ queue name of {@link bullmqQueue} and {@link startWorker}. */
export const DEFAULT_QUEUE_NAME = 'payhooks'
/** BullMQ's own default key prefix. Not 'payhooks': that is the dedupe store's default key prefix. */
export const DEFAULT_QUEUE_PREFIX = 'bull'

const JOB_ID_PREFIX = 'evt-'

/**
 * The BullMQ job id of an event: BullMQ forbids ':' and all-digit custom ids, so the `event_id` is
 * base64url-encoded behind a prefix. Deterministic, so a second delivery finds the first job.
 *
 * @example
 * const job = await bullQueue.getJob(jobIdFor('evt_123')) // 'evt-ZXZ0XzEyMw'
 */
export function jobIdFor(eventId: string): string {
  return JOB_ID_PREFIX + Buffer.from(eventId, 'utf8').toString('base64url')
}

/** The `event_id` a job id was made from, or undefined for a job payhooks did not add. */
export function eventIdOf(jobId: string | undefined): string | undefined {
  if (!jobId?.startsWith(JOB_ID_PREFIX)) return undefined
  return Buffer.from(jobId.slice(JOB_ID_PREFIX.length), 'base64url').toString('utf8')
}

function isClient(connection: QueueConnection): connection is Redis {
  return typeof connection === 'object' && typeof (connection as Redis).duplicate === 'function'
}

/** Checks a connection option up front, so a mistake fails at start-up rather than on the first delivery. */
export function checkConnection(connection: QueueConnection, caller: string): void {
  if (typeof connection === 'string') {
    if (connection === '') throw new TypeError(`${caller}: connection must not be empty`)
    return
  }
  if (typeof connection !== 'object' || connection === null) {
    throw new TypeError(`${caller}: connection must be a redis:// URL, ioredis options or an ioredis client`)
  }
  const keyPrefix = isClient(connection) ? connection.options.keyPrefix : connection.keyPrefix
  if (keyPrefix) {
    throw new TypeError(`${caller}: BullMQ cannot use an ioredis keyPrefix; use the prefix option instead`)
  }
}

export function openConnection(connection: QueueConnection, overrides: RedisOptions): Redis {
  if (typeof connection === 'string') return new Redis(connection, overrides)
  if (isClient(connection)) return connection.duplicate(overrides)
  return new Redis({ ...connection, ...overrides })
}

export async function closeConnection(client: Redis): Promise<void> {
  if (client.status === 'end') return
  try {
    await client.quit()
  } catch {
    client.disconnect()
  }
}

/**
 * Resolves once `client` is connected, or rejects after `timeoutMs`. Commands are only sent on a
 * ready connection: with the offline queue off they would otherwise fail at once during a blip.
 */
export function whenReady(client: Redis, timeoutMs: number, what: string): Promise<void> {
  if (client.status === 'ready') return Promise.resolve()
  if (client.status === 'end') return Promise.reject(new Error(`${what}: connection closed`))
  return new Promise<void>((resolve, reject) => {
    const onReady = () => {
      clearTimeout(timer)
      resolve()
    }
    const timer = setTimeout(() => {
      client.off('ready', onReady)
      reject(new Error(`${what}: Redis connection not ready within ${timeoutMs} ms (${client.status})`))
    }, timeoutMs)
    client.once('ready', onReady)
    if (client.status === 'wait') client.connect().catch(() => {})
  })
}

/** Rejects with a timeout error if `promise` has not settled within `timeoutMs`. */
export function within<T>(promise: Promise<T>, timeoutMs: number, message: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(message())), timeoutMs)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

/**
 * Reports errors as {@link StoreError}s, each message at most once a minute: ioredis emits one per
 * reconnection attempt while Redis is down.
 */
export function connectionErrorReporter(
  operation: string,
  report: () => ((error: WebhookError) => void) | undefined,
): (error: unknown) => void {
  const last = new Map<string, number>()
  return (cause) => {
    const sink = report()
    if (!sink) return
    const error = new StoreError(operation, cause)
    const now = Date.now()
    if ((last.get(error.message) ?? Number.NEGATIVE_INFINITY) > now - 60_000) return
    if (last.size >= 50) last.clear()
    last.set(error.message, now)
    sink(error)
  }
}

export function positiveInteger(value: number, name: string, caller: string): number {
  if (!(Number.isSafeInteger(value) && value >= 1))
    throw new RangeError(`${caller}: ${name} must be a positive integer`)
  return value
}

export function positiveMs(value: number, name: string, caller: string): number {
  if (!(value > 0 && Number.isFinite(value))) throw new RangeError(`${caller}: ${name} must be a positive number`)
  return value
}
