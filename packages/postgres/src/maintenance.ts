import type { Pool, PoolClient } from 'pg'
import { type Database, databaseOf, type Run } from './database.js'
import { checkOut } from './held-client.js'
import { beginWithTurn, type Queryable, takeTurnInTransaction } from './turn.js'
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
 * Runs `work` in a transaction of its own holding the turn of `table` at schema changes (see turn.ts), waiting for it
 * at most `boundMs` while a migrate run or an index build holds it (then a {@link TurnWaitError}); as long as it takes
 * behind another instance's change in a transaction. With `unchanged`, a statement that is a no-op when what `work`
 * makes is all there: tried without the turn (under a lock_timeout too short to hold up a build) when a migrate run
 * or a build holds it, the change then skipped when that statement changed nothing.
 */
export async function changeWithin(
  pool: Pool | Database,
  table: string,
  what: string,
  boundMs: number,
  work: (run: Run) => Promise<unknown>,
  unchanged?: string,
): Promise<void> {
  const db = databaseOf(pool)
  if (db.session === undefined) {
    // A library lending no connection of its own: the turn is waited for inside the change's transaction.
    await db.transaction(async (run) => {
      await takeTurnInTransaction({ query: run }, table)
      await work(run)
    })
    return
  }
  await db.session(async (run) => {
    const client: Queryable = { query: run }
    const meanwhile = unchanged === undefined ? undefined : () => changesNothing(run, unchanged)
    if ((await beginWithTurn(client, table, { what, boundMs, ...(meanwhile ? { meanwhile } : {}) })) === 'done') return
    try {
      await work(run)
      await run('COMMIT')
    } catch (error) {
      await run('ROLLBACK').catch(noop)
      throw error
    }
  })
}

/**
 * Whether `ddl` has nothing to do: run in a transaction under a 1 ms lock_timeout, kept when it wrote nothing (no
 * transaction id), rolled back otherwise or when it failed (a lock not granted at once, a concurrent creation).
 */
async function changesNothing(run: Run, ddl: string): Promise<boolean> {
  await run('BEGIN')
  try {
    await run('SET LOCAL lock_timeout = 1')
    await run(ddl)
    const { rows } = await run<{ none: boolean }>('SELECT txid_current_if_assigned() IS NULL AS none')
    if (rows[0]?.none !== true) {
      await run('ROLLBACK')
      return false
    }
    await run('COMMIT')
    return true
  } catch {
    await run('ROLLBACK')
    return false
  }
}

/**
 * Runs `ddl` (statements without parameters, `IF NOT EXISTS` or otherwise a no-op once applied) holding the table's
 * turn at schema changes: concurrent `CREATE ... IF NOT EXISTS` can fail on PostgreSQL's catalog, and a transaction
 * waiting for a table's lock behind a `CREATE INDEX CONCURRENTLY` deadlocked with it. While a migrate run or an index
 * build holds the turn, a `ddl` with nothing to do completes at once; one with something to do waits for the turn at
 * most `lockTimeoutMs`, then rejects ({@link TurnWaitError}; init() is tried again by the next delivery).
 */
export async function createOnce(
  pool: Pool | Database,
  table: string,
  ddl: string,
  lockTimeoutMs = 500,
): Promise<void> {
  await changeWithin(pool, table, `creating ${table}`, lockTimeoutMs, (run) => run(ddl), ddl)
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
