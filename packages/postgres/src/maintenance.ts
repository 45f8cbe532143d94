import type { Pool, PoolClient } from 'pg'
import { checkOut } from './held-client.js'

const noop = () => {}

/** Runs `work` in a transaction of its own on one client, released (destroyed after a failure) afterwards. */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const held = await checkOut(pool)
  const { client } = held
  let failure: Error | undefined
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (error) {
    failure = error instanceof Error ? error : new Error(String(error))
    if (!held.failure) await client.query('ROLLBACK').catch(noop)
    throw error
  } finally {
    held.release(failure)
  }
}

/**
 * Runs `ddl` (statements without parameters) under a transaction-scoped advisory lock keyed by the table:
 * concurrent `CREATE ... IF NOT EXISTS` can fail on PostgreSQL's catalog, so instances starting together take turns.
 */
export async function createOnce(pool: Pool, table: string, ddl: string): Promise<void> {
  await inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`payhooks:${table}`])
    await client.query(ddl)
  })
}

export type Logger = { warn?(message: string): void; error(message: string): void }

/**
 * Runs `batch` (one statement, its own short transaction, deleting at most `size` rows) until it deletes fewer than
 * `size`: a sweep over millions of rows never holds its locks for longer than one batch. Resolves how many.
 */
export async function inBatches(batch: (size: number) => Promise<number>, size: number): Promise<number> {
  let total = 0
  for (;;) {
    const deleted = await batch(size)
    total += deleted
    if (deleted < size) return total
  }
}

/**
 * An unref'd timer running `sweep` every `intervalMs` (a tick while the last run goes on is skipped), a failure
 * logged as one line; `stop()` clears it.
 */
export function startSweeper(
  sweep: () => Promise<unknown>,
  intervalMs: number,
  logger: Logger,
  what: string,
): { stop(): void } {
  let running = false
  const timer = setInterval(() => {
    if (running) return
    running = true
    sweep()
      .catch((error: unknown) => {
        const detail = error instanceof Error ? error.message : String(error)
        ;(logger.warn ?? logger.error).call(logger, `[payhooks] ${what} failed: ${detail.split('\n')[0]}`)
      })
      .finally(() => {
        running = false
      })
  }, intervalMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
