import type { Pool } from 'pg'
import { checkOut } from './held-client.js'
import type { PostgresRows } from './types.js'

/** A parameterized statement (`$1`, `$2`...) run somewhere: on a pool, a transaction's handle, one connection. */
export type Run = <R = Record<string, unknown>>(text: string, values?: unknown[]) => Promise<PostgresRows<R>>

/**
 * What the store's upkeep (tables made on first use, migrations in the background, sweeps, fences, health) needs of
 * PostgreSQL, whichever library reaches it: statements outside any transaction, transactions of their own, and one
 * connection outside any transaction (`CREATE INDEX CONCURRENTLY` under a session advisory lock).
 */
export interface Database {
  query: Run
  transaction<T>(work: (run: Run) => Promise<T>): Promise<T>
  /** Absent when the library gives no connection of its own: the background index builds are then skipped. */
  session?: <T>(work: (run: Run) => Promise<T>) => Promise<T>
}

const noop = () => {}
const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)))

/** Runs `work` on a client checked out of `pool`, released (destroyed after a failure) afterwards. */
async function onClient<T>(pool: Pool, work: (run: Run, rollback: () => Promise<void>) => Promise<T>): Promise<T> {
  const held = await checkOut(pool)
  const { client } = held
  let failure: Error | undefined
  const run: Run = (text, values) => client.query(text, values) as never
  try {
    return await work(run, async () => {
      if (!held.failure) await client.query('ROLLBACK').catch(noop)
    })
  } catch (error) {
    failure = asError(error)
    throw error
  } finally {
    held.release(failure)
  }
}

const pools = new WeakMap<Pool, Database>()

/** `pool` as a {@link Database}: `query` looked up on the pool at each call (tests spy on it). */
export function poolDatabase(pool: Pool): Database {
  let database = pools.get(pool)
  if (database === undefined) {
    database = {
      query: (text, values) => pool.query(text, values) as never,
      transaction: (work) =>
        onClient(pool, async (run, rollback) => {
          await run('BEGIN')
          try {
            const result = await work(run)
            await run('COMMIT')
            return result
          } catch (error) {
            await rollback()
            throw error
          }
        }),
      session: (work) => onClient(pool, (run) => work(run)),
    }
    pools.set(pool, database)
  }
  return database
}

/** A `pg.Pool` or a {@link Database}, as a {@link Database}. */
export const databaseOf = (source: Pool | Database): Database =>
  typeof (source as Partial<Database>).transaction === 'function' ? (source as Database) : poolDatabase(source as Pool)

/** The SQLSTATE of a driver's error, or of the error it wraps (Drizzle's `cause`, TypeORM's `driverError`). */
export function sqlStateOf(error: unknown): string | undefined {
  for (let at = error, depth = 0; at !== null && typeof at === 'object' && depth < 4; depth++) {
    const code = (at as { code?: unknown }).code
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code
    const inner = at as { driverError?: unknown; cause?: unknown }
    at = inner.driverError ?? inner.cause
  }
  return undefined
}
