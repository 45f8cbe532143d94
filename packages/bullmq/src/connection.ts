import { StoreError, type WebhookError } from '@payhooks/core'
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
