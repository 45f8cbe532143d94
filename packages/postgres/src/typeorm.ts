import type { Pool } from 'pg'
import type { DataSource, EntityManager, QueryResult, QueryRunner } from 'typeorm'
import { hasMethods, isPgPool, refuse, UnusableLibraryError } from './binding-checks.js'
import { bindPostgresStore } from './engine.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresRows } from './types.js'

const NEEDS = "a TypeORM DataSource of type 'postgres': typeormStore(new DataSource({ type: 'postgres', ... }))"

const rowsOf = (result: QueryResult): PostgresRows => ({
  rows: result.records ?? [],
  rowCount: result.affected ?? null,
})

/** A statement on `runner`, answered with its rows and count (TypeORM's structured result). */
const on = async (runner: QueryRunner, text: string, values: unknown[]) =>
  rowsOf(await runner.query(text, values, true))

/**
 * A `postgresStore` whose handlers write through TypeORM: `context.db` is the `EntityManager` of the event's
 * transaction (`dataSource.transaction()`), and what the handlers write with it (its repositories, `save`, `query`)
 * commits together with the event's done marker, or not at all. The transaction is opened before the handlers run;
 * catch an SQL error inside a nested `manager.transaction()` (a savepoint). `init()` needs the data source
 * initialized (`await dataSource.initialize()` first). `maxConcurrentEvents` is its `poolSize` (or `extra.max`, else
 * 10) less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { typeormStore } from '@payhooks/postgres/typeorm'
 * import { DataSource } from 'typeorm'
 * import { Settlement } from './settlement.js'
 *
 * const dataSource = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, entities: [Settlement] })
 * await dataSource.initialize()
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: typeormStore(dataSource) })
 * webhooks.on('transaction_settled', async (event, { db: manager }) => {
 *   await manager.insert(Settlement, { transactionId: event.data.transaction_id, amount: event.data.settlement_amount })
 * })
 */
export function typeormStore(
  dataSource: DataSource,
  options: BoundPostgresStoreOptions = {},
): BoundPostgresStore<EntityManager> {
  const where = 'typeormStore'
  if (isPgPool(dataSource)) refuse(where, dataSource, NEEDS)
  if (hasMethods(dataSource, 'transaction', 'getRepository') && !hasMethods(dataSource, 'createQueryRunner')) {
    refuse(where, dataSource, `${NEEDS}, not one of its EntityManagers`)
  }
  if (!hasMethods(dataSource, 'transaction', 'createQueryRunner') || typeof dataSource.options !== 'object') {
    refuse(where, dataSource, NEEDS)
  }
  if (dataSource.options.type !== 'postgres') {
    throw new TypeError(`${where}: got a DataSource of type '${dataSource.options.type}'; it needs ${NEEDS}`)
  }
  const pool = dataSource.options as { poolSize?: number; extra?: { max?: number } }
  const alone = async <T>(work: (runner: QueryRunner) => Promise<T>): Promise<T> => {
    const runner = dataSource.createQueryRunner()
    try {
      return await work(runner)
    } finally {
      await runner.release()
    }
  }
  return bindPostgresStore<EntityManager>(
    {
      name: where,
      poolSize: pool.poolSize ?? pool.extra?.max ?? 10,
      transaction: (work) => dataSource.transaction((manager) => work(manager)),
      query(manager, text, values) {
        // The transaction's pg client, once its query runner connected (it has, to begin): without TypeORM's logging.
        const connection = (manager.queryRunner as { databaseConnection?: unknown } | undefined)?.databaseConnection
        if (hasMethods(connection, 'query', 'release') && !isPgPool(connection)) {
          return (connection as Pick<Pool, 'query'>).query(text, values) as Promise<PostgresRows>
        }
        return on(manager.queryRunner as QueryRunner, text, values)
      },
      run(text, values) {
        // The driver's pg.Pool (its master), set at initialize(): one statement without a query runner around it.
        const master: unknown = (dataSource.driver as { master?: unknown } | undefined)?.master
        if (isPgPool(master)) return (master as Pool).query(text, values) as Promise<PostgresRows>
        return alone((runner) => on(runner, text, values))
      },
      session: (work) => alone((runner) => work((text, values) => on(runner, text, values))),
      check() {
        if (!dataSource.isInitialized) {
          throw new UnusableLibraryError(
            `${where}: the DataSource is not initialized (or was destroyed); it needs await dataSource.initialize() before the receiver starts`,
          )
        }
      },
    },
    options,
  )
}
