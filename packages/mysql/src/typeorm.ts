import type { DataSource, EntityManager, QueryResult, QueryRunner } from 'typeorm'
import { bindMysqlStore } from './engine.js'
import { type CallbackConnection, hasMethods, libraryPool, refuse, runOnRaw } from './library-pool.js'
import type { BoundMysqlStore, BoundMysqlStoreOptions } from './types.js'
import { watchStatements } from './watch.js'

const NEEDS = "a TypeORM DataSource of type 'mysql' or 'mariadb': typeormStore(new DataSource({ type: 'mysql', ... }))"

/**
 * A `mysqlStore` whose handlers write through TypeORM (a DataSource of type `mysql` or `mariadb`): `context.db` is
 * the `EntityManager` of the event's transaction (`dataSource.transaction`), and what the handlers write with it
 * commits together with the event's done marker, or not at all. Let SQL errors propagate. Claims and renewals go to
 * query runners of the DataSource outside the transaction. Same tables, options and migrations as `mysqlStore`;
 * `maxConcurrentEvents` is the DataSource's `poolSize` (or `extra.connectionLimit`) less one. Initialize the
 * DataSource before the receiver starts.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { typeormStore } from '@payhooks/mysql/typeorm'
 * import { DataSource } from 'typeorm'
 * import { Settlement } from './settlement.js'
 *
 * const dataSource = new DataSource({ type: 'mysql', url: process.env.MYSQL_URL, entities: [Settlement] })
 * await dataSource.initialize()
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: typeormStore(dataSource) })
 * webhooks.on('transaction_settled', async (event, { db: manager }) => {
 *   await manager.insert(Settlement, { transactionId: event.data.transaction_id, amount: event.data.settlement_amount })
 * })
 */
export function typeormStore(
  dataSource: DataSource,
  options: BoundMysqlStoreOptions = {},
): BoundMysqlStore<EntityManager> {
  const where = 'typeormStore'
  if (hasMethods(dataSource, 'transaction', 'getRepository') && !hasMethods(dataSource, 'createQueryRunner')) {
    refuse(where, dataSource, `${NEEDS}, not one of its EntityManagers`)
  }
  if (!hasMethods(dataSource, 'transaction', 'createQueryRunner') || typeof dataSource.options !== 'object') {
    refuse(where, dataSource, NEEDS)
  }
  const type = dataSource.options.type
  if (type !== 'mysql' && type !== 'mariadb') {
    throw new TypeError(`${where}: got a DataSource of type '${type}'; it needs ${NEEDS}`)
  }
  const sized = dataSource.options as { poolSize?: number; extra?: { connectionLimit?: number } }
  const pool = libraryPool(
    async () => {
      const runner = dataSource.createQueryRunner()
      const connection = (await runner.connect()) as CallbackConnection
      return { run: (text, values) => runOnRaw(connection, text, values), release: () => runner.release() }
    },
    { closed: () => !dataSource.isInitialized, size: sized.poolSize ?? sized.extra?.connectionLimit ?? 10 },
  )
  return bindMysqlStore<EntityManager>(
    {
      name: where,
      pool,
      transaction: (work) => dataSource.transaction((manager) => work(manager)),
      query: async (manager, text, values) =>
        ((await (manager.queryRunner as QueryRunner).query(text, values, true)) as QueryResult).raw,
      watch: (manager, note) => watchStatements(manager.queryRunner as QueryRunner, ['query'], note),
      check() {
        if (!dataSource.isInitialized) {
          throw new TypeError(
            `${where}: the DataSource is not initialized (or was destroyed); it needs await dataSource.initialize() before the receiver starts`,
          )
        }
      },
    },
    options,
  )
}
