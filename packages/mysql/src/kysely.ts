import { CompiledQuery, type Kysely, type QueryResult, type Transaction } from 'kysely'
import mysql from 'mysql2'
import { bindMysqlStore } from './engine.js'
import { described, hasMethods, libraryPool, refuse } from './library-pool.js'
import type { BoundMysqlStore, BoundMysqlStoreOptions } from './types.js'
import { watchStatements } from './watch.js'

const NEEDS = 'a Kysely instance on MySQL: kyselyStore(new Kysely<DB>({ dialect: new MysqlDialect({ pool }) }))'

/** Kysely's answer as mysql2 gives it: a result header for INSERT, UPDATE and DELETE, else the rows. */
function resultOf(result: QueryResult<unknown>): unknown {
  if (result.numAffectedRows === undefined) return result.rows
  return { affectedRows: Number(result.numAffectedRows), changedRows: Number(result.numChangedRows ?? 0) }
}

const raw = (text: string, values: unknown[]) => CompiledQuery.raw(mysql.format(text, values as never[]))

/**
 * A `mysqlStore` whose handlers write through Kysely (`MysqlDialect`, over a mysql2 pool): `context.db` is Kysely's
 * `Transaction<DB>` of the event, and what the handlers write with it commits together with the event's done marker,
 * or not at all. Catch an SQL error inside a savepoint, or let it propagate. Claims, renewals and upkeep go to
 * connections of the Kysely instance outside the transaction. Same tables, options and migrations as `mysqlStore`.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { kyselyStore } from '@payhooks/mysql/kysely'
 * import { Kysely, MysqlDialect } from 'kysely'
 * import { createPool } from 'mysql2'
 * import type { DB } from './db.js'
 *
 * const db = new Kysely<DB>({ dialect: new MysqlDialect({ pool: createPool({ uri: process.env.MYSQL_URL }) }) })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: kyselyStore(db) })
 * webhooks.on('transaction_settled', async (event, { db: trx }) => {
 *   await trx
 *     .insertInto('settlements')
 *     .values({ transaction_id: event.data.transaction_id, amount: event.data.settlement_amount })
 *     .execute()
 * })
 */
export function kyselyStore<DB>(
  db: Kysely<DB>,
  options: BoundMysqlStoreOptions = {},
): BoundMysqlStore<Transaction<DB>> {
  const where = 'kyselyStore'
  if (!hasMethods(db, 'transaction', 'executeQuery', 'withoutPlugins', 'connection', 'getExecutor')) {
    refuse(where, db, NEEDS)
  }
  const adapter = db.getExecutor().adapter
  if (!/mysql/i.test(adapter.constructor.name))
    refuse(where, db, `${NEEDS}; its dialect's adapter is ${described(adapter)}`)
  const plain = db.withoutPlugins()
  const executor = plain.getExecutor()
  let destroyed = false
  const failed = (error: unknown) => {
    if (error instanceof Error && /destroy|closed/i.test(error.message)) destroyed = true
    return Promise.reject(error)
  }
  const pool = libraryPool(
    () =>
      new Promise((resolve, reject) => {
        plain
          .connection()
          .execute(
            (one) =>
              new Promise<void>((release) =>
                resolve({
                  run: async (text, values) => resultOf(await one.executeQuery(raw(text, values))),
                  release: () => release(),
                }),
              ),
          )
          .catch((error: unknown) => failed(error).catch(reject))
      }),
    {
      closed: () => destroyed,
      size: 10,
      // A claim or a renewal: one statement on a connection Kysely takes and gives back, as its own queries do.
      query: async (text, values) => resultOf(await executor.executeQuery(raw(text, values)).catch(failed)),
    },
  )
  return bindMysqlStore<Transaction<DB>>(
    {
      name: where,
      pool,
      transaction: (work) => db.transaction().execute(work),
      // The transaction's executor without plugins: what trx.withoutPlugins() holds, without a Transaction made for it.
      query: async (trx, text, values) =>
        resultOf(await trx.getExecutor().withoutPlugins().executeQuery(raw(text, values))),
      // The transaction's executor provides its one connection, whose executeQuery runs every statement of it.
      async check() {
        try {
          await pool.query('SELECT 1')
        } catch (error) {
          if (!destroyed) throw error
          throw new TypeError(
            `${where}: the Kysely instance was destroyed (db.destroy()), or its pool ended; it needs a live one`,
            { cause: error },
          )
        }
      },
      async watch(trx, note) {
        let connection: object | undefined
        await trx.getExecutor().provideConnection(async (one) => {
          connection = one
        })
        return watchStatements(connection as object, ['executeQuery'], note)
      },
    },
    options,
  )
}
