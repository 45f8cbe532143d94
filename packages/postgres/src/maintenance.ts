import type { Pool, PoolClient } from 'pg'
import { type Database, databaseOf } from './database.js'
import { checkOut } from './held-client.js'
import type { PostgresRows } from './types.js'

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
export async function createOnce(pool: Pool | Database, table: string, ddl: string): Promise<void> {
  await databaseOf(pool).transaction(async (run) => {
    await run('SELECT pg_advisory_xact_lock(hashtext($1))', [`payhooks:${table}`])
    await run(ddl)
  })
}

export type Logger = { warn?(message: string): void; error(message: string): void }

/** What one batch of a sweep did: how many rows it deleted, and the latest expiry among them (null for none). */
export interface Batch {
  n: number
  last: Date | null
}

/**
 * A batch of a sweep of `table` by its expiry column `expiry` (indexed): one statement deleting at most `$1` rows
 * matching `condition`, oldest first, from the expiry `$2` on (each batch starts where the last ended, so it never
 * walks the index entries of the rows deleted before it), skipping rows another statement holds. Answers
 * {@link Batch}'s `n` and `last`. `condition` bounds the expiry by `statement_timestamp()`, not `clock_timestamp()`:
 * a stable bound ends the index scan there, where a volatile one is a filter read on every row after it (the last
 * batch then walked every live row's index entry).
 */
export function batchSql(table: string, expiry: string, condition: string): string {
  return `WITH gone AS (DELETE FROM ${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${table}
WHERE ${condition} AND ${expiry} >= $2::timestamptz ORDER BY ${expiry} LIMIT $1 FOR UPDATE SKIP LOCKED))
RETURNING ${expiry} AS at) SELECT count(*)::int AS n, max(at) AS last FROM gone`
}

/**
 * Runs `batch` (one statement, its own short transaction, deleting at most `size` rows from the expiry `after` on;
 * see {@link batchSql}) until it deletes fewer than `size`: a sweep over millions of rows never holds its locks for
 * longer than one batch. Resolves how many.
 */
export async function inBatches(
  pool: Pool | Database,
  statement: string,
  values: unknown[],
  size: number,
): Promise<number> {
  const { query } = databaseOf(pool)
  let total = 0
  let after: Date | string = '-infinity'
  for (;;) {
    const result: PostgresRows<Batch> = await query<Batch>(statement, [size, after, ...values])
    const { n, last }: Batch = result.rows[0] ?? { n: 0, last: null }
    total += n
    if (n < size || last === null) return total
    after = last
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
