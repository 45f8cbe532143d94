import { sql } from 'drizzle-orm'
import type { MySql2Database } from 'drizzle-orm/mysql2'
import mysql from 'mysql2'
import type { Pool } from 'mysql2/promise'
import { bindMysqlStore } from './engine.js'
import { described, hasMethods, refuse } from './library-pool.js'
import { isClosed } from './pool-checks.js'
import type { BoundMysqlStore, BoundMysqlStoreOptions } from './types.js'
import { watchStatements } from './watch.js'

/** Drizzle's transaction of the database `D`: what its `transaction()` hands the callback. */
export type DrizzleTransaction<D> = D extends {
  transaction(work: (tx: infer T) => Promise<unknown>, ...rest: never[]): Promise<unknown>
}
  ? T
  : never

// biome-ignore lint/suspicious/noExplicitAny: any schema
type DrizzleOverMysql2 = MySql2Database<any> & { $client: unknown }

const NEEDS = 'the database drizzle() of drizzle-orm/mysql2 returns over a mysql2 pool: drizzleStore(drizzle(pool))'

/** A mysql2 pool, promise or callback style, as the promise Pool the store runs its own statements on. */
function promisePoolOf(client: unknown): Pool | undefined {
  if (!hasMethods(client, 'getConnection', 'query')) return undefined
  const pool = client as { pool?: unknown; promise?: () => Pool }
  if (hasMethods(pool.pool, 'getConnection')) return client as Pool
  return typeof pool.promise === 'function' ? pool.promise() : undefined
}

/**
 * A `mysqlStore` whose handlers write through Drizzle (drizzle-orm/mysql2, over a mysql2 pool): `context.db` is
 * Drizzle's transaction of the event, typed by your database's schema, and what the handlers write with it commits
 * together with the event's done marker, or not at all. The transaction is opened before the handlers run; catch an
 * SQL error inside a nested `tx.transaction()` (a savepoint), or let it propagate. Claims and renewals go to the pool
 * outside it. Same tables, options and migrations as `mysqlStore`; `maxConcurrentEvents` is the pool's
 * `connectionLimit` less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { drizzleStore } from '@payhooks/mysql/drizzle'
 * import { drizzle } from 'drizzle-orm/mysql2'
 * import mysql from 'mysql2/promise'
 * import { settlements } from './schema.js'
 *
 * const db = drizzle(mysql.createPool({ uri: process.env.MYSQL_URL, connectionLimit: 20 }))
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: drizzleStore(db) })
 * webhooks.on('transaction_settled', async (event, { db: tx }) => {
 *   await tx.insert(settlements).values({ transactionId: event.data.transaction_id, amount: event.data.settlement_amount })
 * })
 */
export function drizzleStore<D extends DrizzleOverMysql2>(
  db: D,
  options: BoundMysqlStoreOptions = {},
): BoundMysqlStore<DrizzleTransaction<D>> {
  const where = 'drizzleStore'
  if (promisePoolOf(db) !== undefined)
    refuse(where, db, `${NEEDS} (or mysqlStore(pool), whose context.db is a connection)`)
  if (!hasMethods(db, 'transaction', 'execute')) refuse(where, db, NEEDS)
  const dialect = (db as { dialect?: { constructor?: { name?: string } } }).dialect?.constructor?.name
  if (dialect !== undefined && !/mysql/i.test(dialect)) {
    throw new TypeError(`${where}: got a Drizzle database of ${dialect}; it needs ${NEEDS}`)
  }
  const client: unknown = db.$client
  const pool = promisePoolOf(client)
  if (pool === undefined) {
    const over = client === undefined ? 'no $client (drizzle-orm before 0.33)' : `$client ${described(client)}`
    throw new TypeError(`${where}: got a Drizzle database with ${over}; it needs ${NEEDS}`)
  }
  const alive = () => {
    if (isClosed(pool)) {
      throw new TypeError(
        `${where}: the mysql2 pool under the Drizzle database was ended (pool.end()); it needs a live pool`,
      )
    }
  }
  alive()
  type Tx = DrizzleTransaction<D>
  return bindMysqlStore<Tx>(
    {
      name: where,
      pool,
      transaction: (work) => db.transaction((tx) => work(tx as Tx)),
      query: async (tx, text, values) =>
        (
          (await (tx as unknown as DrizzleOverMysql2).execute(
            sql.raw(mysql.format(text, values as never[])),
          )) as unknown[]
        )[0],
      // Drizzle's transaction runs its statements on the mysql2 connection of its session.
      watch: (tx, note) =>
        watchStatements((tx as unknown as { session: { client: object } }).session.client, ['query', 'execute'], note),
      check: alive,
    },
    options,
  )
}
