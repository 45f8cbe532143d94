import { type SQL, sql } from 'drizzle-orm'
import type { NodePgDatabase } from 'drizzle-orm/node-postgres'
import type { Pool } from 'pg'
import { described, hasMethods, isPgPool, refuse, UnusableLibraryError } from './binding-checks.js'
import { poolDatabase } from './database.js'
import { bindPostgresStore } from './engine.js'
import { numbered, valuesInOrder } from './placeholders.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresRows } from './types.js'

/** Drizzle's transaction of the database `D`: what its `transaction()` hands the callback. */
export type DrizzleTransaction<D> = D extends {
  transaction(work: (tx: infer T) => Promise<unknown>, ...rest: never[]): Promise<unknown>
}
  ? T
  : never

// biome-ignore lint/suspicious/noExplicitAny: any schema
type DrizzleOverPg = NodePgDatabase<any> & { $client: Pool }

const NEEDS = 'the database drizzle() of drizzle-orm/node-postgres returns over a pg.Pool: drizzleStore(drizzle(pool))'

/** `text` with its `$n` placeholders as Drizzle's parameters. */
function toSql(text: string, values: unknown[]): SQL {
  const { parts, order } = numbered(text)
  const statement = sql.raw(parts[0] as string)
  const ordered = valuesInOrder(order, values)
  for (let i = 0; i < ordered.length; i++) statement.append(sql`${ordered[i]}`).append(sql.raw(parts[i + 1] as string))
  return statement
}

/**
 * The pg client of Drizzle's transaction (its session's, checked out of the pool for it), where the store's own
 * statements go without Drizzle's SQL builder; undefined on a Drizzle without that shape (the builder then).
 */
function clientOf(tx: unknown): Pick<Pool, 'query'> | undefined {
  const client = (tx as { session?: { client?: unknown } }).session?.client
  return hasMethods(client, 'query', 'release') && !isPgPool(client) ? (client as Pick<Pool, 'query'>) : undefined
}

/**
 * A `postgresStore` whose handlers write through Drizzle (drizzle-orm/node-postgres, over a `pg.Pool`): `context.db`
 * is Drizzle's transaction of the event, typed by your database's schema, and what the handlers write with it commits
 * together with the event's done marker, or not at all. The transaction is opened before the handlers run; catch an
 * SQL error inside a nested `tx.transaction()` (a savepoint). Claims and renewals go to the pool outside it. Same
 * table, options and migrations as `postgresStore`; `maxConcurrentEvents` is the pool's `max` less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { drizzleStore } from '@payhooks/postgres/drizzle'
 * import { drizzle } from 'drizzle-orm/node-postgres'
 * import pg from 'pg'
 * import { settlements } from './schema.js'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 2000 })
 * const db = drizzle(pool)
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: drizzleStore(db) })
 * webhooks.on('transaction_settled', async (event, { db: tx }) => {
 *   await tx.insert(settlements).values({ transactionId: event.data.transaction_id, amount: event.data.settlement_amount })
 * })
 */
export function drizzleStore<D extends DrizzleOverPg>(
  db: D,
  options: BoundPostgresStoreOptions = {},
): BoundPostgresStore<DrizzleTransaction<D>> {
  const where = 'drizzleStore'
  if (isPgPool(db)) refuse(where, db, `${NEEDS} (or postgresStore(pool), whose context.db is a pg client)`)
  if (!hasMethods(db, 'transaction', 'execute')) refuse(where, db, NEEDS)
  const client: unknown = (db as { $client?: unknown }).$client
  if (!isPgPool(client)) {
    const over = client === undefined ? 'no $client (drizzle-orm before 0.33)' : `$client ${described(client)}`
    throw new TypeError(`${where}: got a Drizzle database with ${over}; it needs ${NEEDS}`)
  }
  const pool = client as unknown as Pool
  const alive = () => {
    if ((pool as { ended?: boolean }).ended) {
      throw new UnusableLibraryError(
        `${where}: the pg.Pool under the Drizzle database was ended (pool.end()); it needs a live pool`,
      )
    }
  }
  alive()
  const { query: run, session } = poolDatabase(pool)
  type Tx = DrizzleTransaction<D>
  return bindPostgresStore<Tx>(
    {
      name: where,
      poolSize: pool.options?.max ?? 10,
      transaction: (work) => db.transaction((tx) => work(tx as Tx)),
      query: (tx, text, values) => {
        const client = clientOf(tx)
        return client
          ? (client.query(text, values) as Promise<PostgresRows>)
          : ((tx as unknown as DrizzleOverPg).execute(toSql(text, values)) as Promise<PostgresRows>)
      },
      run: (text, values) => run(text, values),
      session,
      check: alive,
    },
    options,
  )
}
