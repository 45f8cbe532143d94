import { CompiledQuery, type Kysely, type QueryResult, type Transaction } from 'kysely'
import { described, hasMethods, isPgPool, refuse, UnusableLibraryError } from './binding-checks.js'
import { bindPostgresStore } from './engine.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresRows } from './types.js'

const NEEDS = 'a Kysely instance on PostgreSQL: kyselyStore(new Kysely<DB>({ dialect: new PostgresDialect({ pool }) }))'

/** Kysely's answer as the store reads it: `numAffectedRows` for INSERT, UPDATE and DELETE, else the rows returned. */
function rowsOf(result: QueryResult<unknown>): PostgresRows {
  const rows = result.rows as Record<string, unknown>[]
  return { rows, rowCount: result.numAffectedRows === undefined ? rows.length : Number(result.numAffectedRows) }
}

/** pg's answer to a pool that was ended; the store asks before the first event, at `init()`. */
const ENDED = /after calling end on the pool|destroyed/i

/**
 * A `postgresStore` whose handlers write through Kysely: `context.db` is the event's `Transaction<DB>`, typed by your
 * database's interface, and what the handlers write with it commits together with the event's done marker, or not at
 * all. The transaction is opened before the handlers run; catch an SQL error inside `trx.savepoint()` (Kysely 0.28's
 * controlled transactions) or let it propagate. The store's own statements run without your plugins
 * (`withoutPlugins()`), so `CamelCasePlugin` changes nothing of them. Kysely does not tell its pool's size: set
 * `maxConcurrentEvents` to your pool's `max` less one (default 9, for pg's default pool of 10).
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { kyselyStore } from '@payhooks/postgres/kysely'
 * import { Kysely, PostgresDialect } from 'kysely'
 * import pg from 'pg'
 * import type { DB } from './db.js'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, connectionTimeoutMillis: 2000 })
 * const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: kyselyStore(db, { maxConcurrentEvents: 9 }) })
 * webhooks.on('transaction_settled', async (event, { db: trx }) => {
 *   await trx
 *     .insertInto('settlements')
 *     .values({ transaction_id: event.data.transaction_id, amount: event.data.settlement_amount })
 *     .execute()
 * })
 */
export function kyselyStore<DB>(
  db: Kysely<DB>,
  options: BoundPostgresStoreOptions = {},
): BoundPostgresStore<Transaction<DB>> {
  const where = 'kyselyStore'
  if (isPgPool(db)) refuse(where, db, NEEDS)
  if (!hasMethods(db, 'transaction', 'executeQuery', 'withoutPlugins', 'connection', 'getExecutor')) {
    refuse(where, db, NEEDS)
  }
  // PostgreSQL's adapter (of PostgresDialect, or a dialect on postgres.js) has both; MySQL's, SQLite's, MSSQL's don't.
  const adapter = db.getExecutor().adapter
  if (!adapter.supportsTransactionalDdl || !adapter.supportsReturning) {
    refuse(where, db, `${NEEDS}; its dialect's adapter is ${described(adapter)}`)
  }
  const plain = db.withoutPlugins()
  const raw = (text: string, values: unknown[]) => CompiledQuery.raw(text, values)
  return bindPostgresStore<Transaction<DB>>(
    {
      name: where,
      transaction: (work) => db.transaction().execute(work),
      // The transaction's executor without plugins: what trx.withoutPlugins() holds, without a Transaction made for it.
      query: async (trx, text, values) =>
        rowsOf(await trx.getExecutor().withoutPlugins().executeQuery(raw(text, values))),
      run: async (text, values) => rowsOf(await plain.executeQuery(raw(text, values))),
      session: (work) =>
        plain
          .connection()
          .execute((one) => work(async (text, values) => rowsOf(await one.executeQuery(raw(text, values))))),
      async check() {
        try {
          await plain.executeQuery(raw('SELECT 1', []))
        } catch (error) {
          if (!ENDED.test(error instanceof Error ? error.message : '')) throw error
          throw new UnusableLibraryError(
            `${where}: the Kysely instance was destroyed (db.destroy()), or its pool ended; it needs a live one`,
            {
              cause: error,
            },
          )
        }
      },
    },
    options,
  )
}
