import type { EventEmitter } from 'node:events'
import { StoreError, type StoreErrorOperation, type WebhookError } from '@payhooks/core'
import type { Queue, Worker } from 'bullmq'
import { type Cluster, Redis, type RedisOptions } from 'ioredis'

/**
 * How the queue and its workers reach Redis: a `redis://` URL, ioredis options, or an ioredis client (a Redis
 * Cluster too: then give the queue and its workers a `prefix` holding a hash tag, such as `'{payhooks}'`).
 * A client is never used directly: each queue or worker opens its own connection with
 * `client.duplicate()` (a queue's needs `enableOfflineQueue: false`, a worker's
 * `maxRetriesPerRequest: null`) and closes it on `close()`.
 */
export type QueueConnection = string | Redis | Cluster | RedisOptions

export function isClient(connection: QueueConnection): connection is Redis | Cluster {
  return typeof connection === 'object' && typeof (connection as Redis).duplicate === 'function'
}

export function isCluster(connection: QueueConnection): connection is Cluster {
  return typeof connection === 'object' && (connection as Cluster).isCluster === true
}

export function openConnection(connection: QueueConnection, overrides: RedisOptions): Redis | Cluster {
  if (typeof connection === 'string') return new Redis(connection, overrides)
  if (isCluster(connection)) {
    // A Cluster takes the options of its node connections under `redisOptions`, its offline queue at the top.
    const offline =
      overrides.enableOfflineQueue === undefined ? {} : { enableOfflineQueue: overrides.enableOfflineQueue }
    return connection.duplicate([], { ...offline, redisOptions: { ...connection.options.redisOptions, ...overrides } })
  }
  if (isClient(connection)) return connection.duplicate(overrides)
  return new Redis({ ...connection, ...overrides })
}

const noop = () => {}

/**
 * Closes a BullMQ queue or worker, leaving no unhandled rejection behind. BullMQ 5's connections report a
 * failed start with `emit('error')` from a promise chain of their constructor, and their `close()` removes
 * every listener first: a queue or worker closed while its connection was still starting (its INFO in flight)
 * made that emit throw once the client ended, an unhandled "Connection is closed." or "Cluster is ended." that
 * ends a Node process. So on BullMQ 5 each of its connections gets a listener again, for an error that only says
 * a connection we closed never finished starting. BullMQ 6 emits only to a listener (taskforcesh/bullmq#3546) and
 * keeps its connections in a backend (`getBackend()`): there, closing is all.
 */
export async function closeBullmq(owner: Queue | Worker, close: () => Promise<void>): Promise<void> {
  await close().catch(noop)
  const fields = owner as unknown as Record<string, unknown>
  if (typeof fields.getBackend === 'function') return
  for (const emitter of [fields.connection, fields.blockingConnection] as (EventEmitter | undefined)[]) {
    if (emitter && emitter.listenerCount('error') === 0) emitter.on('error', noop)
  }
}

export async function closeConnection(client: Redis | Cluster): Promise<void> {
  if (client.status === 'end') return
  try {
    await client.quit()
  } catch {
    client.disconnect()
  }
}

/**
 * Reports errors as {@link StoreError}s, each message at most once a minute: ioredis emits one per
 * reconnection attempt while Redis is down.
 */
export function connectionErrorReporter(
  operation: StoreErrorOperation,
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
