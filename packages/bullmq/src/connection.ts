import { StoreError, type WebhookError } from '@payhooks/core'
import { Redis, type RedisOptions } from 'ioredis'

/**
 * How the queue and its workers reach Redis: a `redis://` URL, ioredis options, or an ioredis client.
 * A client is never used directly: each queue or worker opens its own connection with
 * `client.duplicate()` (a queue's needs `enableOfflineQueue: false`, a worker's
 * `maxRetriesPerRequest: null`) and closes it on `close()`.
 */
export type QueueConnection = string | Redis | RedisOptions

export function isClient(connection: QueueConnection): connection is Redis {
  return typeof connection === 'object' && typeof (connection as Redis).duplicate === 'function'
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
