import type { Sequelize, Transaction } from 'sequelize'
import { bindMysqlStore } from './engine.js'
import { type CallbackConnection, hasMethods, libraryPool, refuse, runOnRaw } from './library-pool.js'
import type { BoundMysqlStore, BoundMysqlStoreOptions } from './types.js'
import { watchStatements } from './watch.js'

const NEEDS =
  "a Sequelize instance on MySQL or MariaDB: sequelizeStore(new Sequelize(url, { dialect: 'mysql' })) (or 'mariadb')"

/** Sequelize's connection manager: raw driver connections of its pool, for the store's statements. */
interface ConnectionManager {
  getConnection(options?: { type?: string }): Promise<CallbackConnection>
  releaseConnection(connection: unknown): Promise<unknown> | undefined
}

/**
 * A `mysqlStore` whose handlers write through Sequelize (dialect `mysql` or `mariadb`): `context.db` is the
 * Sequelize `Transaction` of the event; pass it to each query (`{ transaction: db }`) and what the handlers write
 * commits together with the event's done marker, or not at all. Let SQL errors propagate. Claims and renewals go to
 * connections of Sequelize's pool outside the transaction. Same tables, options and migrations as `mysqlStore`;
 * `maxConcurrentEvents` is the pool's `max` less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { sequelizeStore } from '@payhooks/mysql/sequelize'
 * import { Sequelize } from 'sequelize'
 * import { Settlement } from './models.js'
 *
 * const sequelize = new Sequelize(process.env.MYSQL_URL!, { dialect: 'mysql', pool: { max: 20 } })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: sequelizeStore(sequelize) })
 * webhooks.on('transaction_settled', async (event, { db: transaction }) => {
 *   await Settlement.create(
 *     { transactionId: event.data.transaction_id, amount: event.data.settlement_amount },
 *     { transaction },
 *   )
 * })
 */
export function sequelizeStore(
  sequelize: Sequelize,
  options: BoundMysqlStoreOptions = {},
): BoundMysqlStore<Transaction> {
  const where = 'sequelizeStore'
  if (!hasMethods(sequelize, 'transaction', 'query', 'getDialect')) refuse(where, sequelize, NEEDS)
  const dialect = sequelize.getDialect()
  if (dialect !== 'mysql' && dialect !== 'mariadb') {
    throw new TypeError(`${where}: got a Sequelize instance on ${dialect}; it needs ${NEEDS}`)
  }
  const manager = (sequelize as unknown as { connectionManager: ConnectionManager }).connectionManager
  // sequelize.close() replaces the manager's getConnection with one that throws.
  let closed = false
  const alive = () => {
    if (closed || Object.hasOwn(manager, 'getConnection')) {
      closed = true
      throw new TypeError(`${where}: the Sequelize instance was closed (sequelize.close()); it needs a live one`)
    }
  }
  alive()
  const pool = libraryPool(
    async () => {
      let connection: CallbackConnection
      try {
        connection = await manager.getConnection({ type: 'write' })
      } catch (error) {
        if (error instanceof Error && /closed/i.test(error.message)) closed = true
        throw error
      }
      return {
        run: (text, values) => runOnRaw(connection, text, values),
        release: () => manager.releaseConnection(connection),
      }
    },
    {
      closed: () => closed,
      size: (sequelize as unknown as { config?: { pool?: { max?: number } } }).config?.pool?.max ?? 5,
    },
  )
  return bindMysqlStore<Transaction>(
    {
      name: where,
      pool,
      transaction: (work) => sequelize.transaction((transaction) => work(transaction)),
      // The transaction's own connection: its statements are the transaction's.
      query: (transaction, text, values) =>
        runOnRaw((transaction as unknown as { connection: CallbackConnection }).connection, text, values),
      check: alive,
      watch: (transaction, note) =>
        watchStatements(
          (transaction as unknown as { connection: object }).connection,
          ['query', 'execute'],
          note,
          true,
        ),
    },
    options,
  )
}
