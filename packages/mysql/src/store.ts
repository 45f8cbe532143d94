import type { Pool, PoolConnection } from 'mysql2/promise'
import { bindMysqlStore } from './engine.js'
import { checkPool } from './pool-checks.js'
import { runTransaction } from './transaction.js'
import type { MysqlStore, MysqlStoreOptions } from './types.js'

const where = 'mysqlStore'

/**
 * Dedupe store on MySQL 8 or MariaDB 10.6+ (mysql2) whose handlers write in the same transaction as the event's done
 * marker, so a handler's effects and "handled" commit together or not at all: exactly-once effects, even when a
 * process dies between its write and its commit. A claim is a committed row with an owner token and a lease (other
 * deliveries answer 409 meanwhile, and `extend` renews it on another connection of the pool); then the handlers run
 * with `context.db`, a `PoolConnection` checked out of the pool at its first statement, inside `START TRANSACTION`,
 * and the row is marked done by that transaction, only if the token still holds it, before `COMMIT`. Handlers that
 * never use `context.db` hold no connection. It advertises `maxConcurrentEvents` as the pool's `connectionLimit - 1`,
 * so a burst of events leaves the app a connection. Takes your `mysql2/promise` Pool and never ends it.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { mysqlStore } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL, connectionLimit: 20, connectTimeout: 2000 })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: mysqlStore(pool) })
 * webhooks.on('transaction_settled', async (event, { db }) => {
 *   await db.query('INSERT INTO settlements (transaction_id, amount) VALUES (?, ?)', [
 *     event.data.transaction_id,
 *     event.data.settlement_amount,
 *   ])
 * })
 */
export function mysqlStore(pool: Pool, options: MysqlStoreOptions = {}): MysqlStore {
  checkPool(pool, where)
  return bindMysqlStore<PoolConnection>(
    {
      name: where,
      pool,
      // Unused: the transaction opens lazily, at context.db's first statement (see runTransaction).
      transaction: () => Promise.reject(new Error('unused')),
      query: async (connection, text, values) => (await connection.query(text, values))[0],
      lazy: (marker, work) => runTransaction(pool, marker, work),
    },
    options,
  ) as MysqlStore
}
