import type { Sql, TransactionSql } from 'postgres'
import { hasMethods, isPgPool, refuse, UnusableLibraryError } from './binding-checks.js'
import { bindPostgresStore } from './engine.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresRows } from './types.js'

const NEEDS = 'a postgres.js client: postgresJsStore(postgres(url))'

type Unsafe = {
  unsafe(
    text: string,
    // biome-ignore lint/suspicious/noExplicitAny: the statement's values, whatever the client's custom types
    values: any[],
    options?: { prepare?: boolean },
  ): PromiseLike<Record<string, unknown>[] & { count: number | null }>
}

// `unsafe` leaves statements unprepared by default, and postgres.js then sends each one with values twice (a Parse
// and Describe, its answer awaited, then the Bind and Execute): prepared, as the client's tagged templates are, each
// of the store's few fixed texts is described once per connection and then runs in one round trip. A client made
// with `prepare: false` (behind PgBouncer's transaction mode) keeps its setting: postgres.js honours it first.
const PREPARED = { prepare: true }

/** A statement with `$n` placeholders, answered as the store reads it; `prepare` for the store's fixed texts. */
async function on(sql: Unsafe, text: string, values: unknown[], prepare = false): Promise<PostgresRows> {
  const rows = await (prepare ? sql.unsafe(text, values, PREPARED) : sql.unsafe(text, values))
  return { rows, rowCount: rows.count ?? null }
}

/**
 * A `postgresStore` whose handlers write through postgres.js: `context.db` is the event's `TransactionSql` (what
 * `sql.begin()` hands its callback), and what the handlers write with it commits together with the event's done
 * marker, or not at all. The transaction is opened before the handlers run; catch an SQL error inside
 * `db.savepoint()`. The store reads its rows by their column names: give it a client without column or value
 * transforms (a second `postgres(url)` for the store if the app's camelizes). `maxConcurrentEvents` is the client's
 * `max` less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { postgresJsStore } from '@payhooks/postgres/postgres-js'
 * import postgres from 'postgres'
 *
 * const sql = postgres(process.env.DATABASE_URL!, { max: 10 })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: postgresJsStore(sql) })
 * webhooks.on('transaction_settled', async (event, { db }) => {
 *   await db`INSERT INTO settlements (transaction_id, amount)
 *     VALUES (${event.data.transaction_id}, ${event.data.settlement_amount})`
 * })
 */
export function postgresJsStore<Types extends Record<string, unknown> = {}>(
  sql: Sql<Types>,
  options: BoundPostgresStoreOptions = {},
): BoundPostgresStore<TransactionSql<Types>> {
  const where = 'postgresJsStore'
  if (isPgPool(sql)) refuse(where, sql, NEEDS)
  if (hasMethods(sql, 'unsafe', 'savepoint')) refuse(where, sql, `${NEEDS}, not a transaction of it`)
  if (!hasMethods(sql, 'begin', 'unsafe', 'reserve') || typeof sql.options !== 'object') {
    refuse(where, sql, `${NEEDS} (postgres 3.4 or later: its begin, unsafe and reserve)`)
  }
  const { transform } = sql.options
  if (transform?.column?.from || transform?.value?.from || transform?.row?.from) {
    throw new TypeError(
      `${where}: got a postgres.js client with result transforms (transform: postgres.camel or the like), which rename the columns the store reads; it needs a client without them: postgresJsStore(postgres(url))`,
    )
  }
  const unsafe = sql as unknown as Unsafe
  return bindPostgresStore<TransactionSql<Types>>(
    {
      name: where,
      poolSize: sql.options.max ?? 10,
      transaction: (work) => sql.begin((tx) => work(tx)) as Promise<never>,
      query: (tx, text, values) => on(tx as unknown as Unsafe, text, values, true),
      run: (text, values) => on(unsafe, text, values, true),
      async session(work) {
        const reserved = await sql.reserve()
        try {
          return await work((text, values) => on(reserved as unknown as Unsafe, text, values))
        } finally {
          reserved.release()
        }
      },
      async check() {
        try {
          await unsafe.unsafe('SELECT 1', [])
        } catch (error) {
          if ((error as { code?: unknown }).code !== 'CONNECTION_ENDED') throw error
          throw new UnusableLibraryError(
            `${where}: the postgres.js client was ended (sql.end()); it needs a live one`,
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
