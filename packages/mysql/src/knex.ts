import type { Knex } from 'knex'
import mysql from 'mysql2'
import { bindMysqlStore } from './engine.js'
import { type CallbackConnection, hasMethods, libraryPool, refuse, runOnRaw } from './library-pool.js'
import type { BoundMysqlStore, BoundMysqlStoreOptions } from './types.js'
import { watchStatements } from './watch.js'

const NEEDS = "a Knex instance on MySQL: knexStore(knex({ client: 'mysql2', connection }))"

/** Knex's own client: its dialect, its pool, a connection of it (a mysql2 connection) for the store's statements. */
interface KnexClient {
  dialect?: string
  pool?: { max?: number }
  config?: { pool?: { max?: number } }
  acquireConnection(): Promise<CallbackConnection>
  releaseConnection(connection: unknown): Promise<unknown>
}

/**
 * A `mysqlStore` whose handlers write through Knex (client `mysql2`): `context.db` is the `Knex.Transaction` of the
 * event, and what the handlers write with it commits together with the event's done marker, or not at all. Catch an
 * SQL error inside a nested `trx.transaction()` (a savepoint), or let it propagate. Claims and renewals go to
 * connections of Knex's pool outside the transaction. Same tables, options and migrations as `mysqlStore`;
 * `maxConcurrentEvents` is the pool's `max` less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { knexStore } from '@payhooks/mysql/knex'
 * import knex from 'knex'
 *
 * const db = knex({ client: 'mysql2', connection: process.env.MYSQL_URL, pool: { max: 20 } })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: knexStore(db) })
 * webhooks.on('transaction_settled', async (event, { db: trx }) => {
 *   await trx('settlements').insert({ transaction_id: event.data.transaction_id, amount: event.data.settlement_amount })
 * })
 */
export function knexStore(knex: Knex, options: BoundMysqlStoreOptions = {}): BoundMysqlStore<Knex.Transaction> {
  const where = 'knexStore'
  if (!hasMethods(knex, 'transaction', 'raw') || typeof knex.client !== 'object') refuse(where, knex, NEEDS)
  const client = knex.client as unknown as KnexClient
  if (client.dialect !== 'mysql' && client.dialect !== 'mysql2') {
    throw new TypeError(`${where}: got a Knex instance on ${client.dialect ?? 'an unknown client'}; it needs ${NEEDS}`)
  }
  const alive = () => {
    if (client.pool === undefined) {
      throw new TypeError(`${where}: the Knex instance has no pool (knex.destroy() was called); it needs a live one`)
    }
  }
  alive()
  const pool = libraryPool(
    async () => {
      const connection = await client.acquireConnection()
      return {
        run: (text, values) => runOnRaw(connection, text, values),
        release: () => client.releaseConnection(connection),
      }
    },
    { closed: () => client.pool === undefined, size: client.pool?.max ?? client.config?.pool?.max ?? 10 },
  )
  return bindMysqlStore<Knex.Transaction>(
    {
      name: where,
      pool,
      transaction: (work) => knex.transaction((trx) => work(trx)),
      // Formatted first: Knex reads `?` and `??` of a raw statement only when given bindings.
      query: async (trx, text, values) => ((await trx.raw(mysql.format(text, values as never[]))) as unknown[])[0],
      // The transaction's client lends its one connection; Knex runs statements on it with mysql2's callback API.
      watch: async (trx, note) =>
        watchStatements(
          await (trx.client as unknown as KnexClient).acquireConnection(),
          ['query', 'execute'],
          note,
          true,
        ),
      check: alive,
    },
    options,
  )
}
