import type { Knex } from 'knex'
import { hasMethods, isPgPool, refuse, UnusableLibraryError } from './binding-checks.js'
import { bindPostgresStore } from './engine.js'
import { numbered, valuesInOrder } from './placeholders.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresRows } from './types.js'

const NEEDS = "a Knex instance on PostgreSQL: knexStore(knex({ client: 'pg', connection }))"

/** Knex's own client: its dialect, its pool, a connection of it (a pg client) for the store's upkeep. */
interface KnexClient {
  dialect?: string
  pool?: { max?: number }
  config?: { pool?: { max?: number } }
  acquireConnection(): Promise<{ query(text: string, values: unknown[]): Promise<PostgresRows> }>
  releaseConnection(connection: unknown): Promise<unknown>
}

/**
 * A statement with `$n` placeholders as Knex's `raw` takes it: `?`, and its values in their order. The store's own
 * statements go to a connection of Knex's (pg's client) without its query builder; this is for a transaction's
 * client of another shape.
 */
function raw(on: Knex | Knex.Transaction, text: string, values: unknown[]): Promise<PostgresRows> {
  const { parts, order } = numbered(text)
  return on.raw(parts.join('?'), valuesInOrder(order, values) as Knex.RawBinding[]) as unknown as Promise<PostgresRows>
}

/**
 * A `postgresStore` whose handlers write through Knex (client `pg`): `context.db` is the event's `Knex.Transaction`,
 * and what the handlers write with it commits together with the event's done marker, or not at all. The transaction
 * is opened before the handlers run; catch an SQL error inside a nested `trx.transaction()` (a savepoint).
 * Claims and renewals run on the pool outside it. `maxConcurrentEvents` is the pool's `max` less one.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { knexStore } from '@payhooks/postgres/knex'
 * import knex from 'knex'
 *
 * const db = knex({ client: 'pg', connection: process.env.DATABASE_URL, pool: { max: 10 } })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: knexStore(db) })
 * webhooks.on('transaction_settled', async (event, { db: trx }) => {
 *   await trx('settlements').insert({ transaction_id: event.data.transaction_id, amount: event.data.settlement_amount })
 * })
 */
export function knexStore(knex: Knex, options: BoundPostgresStoreOptions = {}): BoundPostgresStore<Knex.Transaction> {
  const where = 'knexStore'
  if (isPgPool(knex)) refuse(where, knex, NEEDS)
  if (!hasMethods(knex, 'transaction', 'raw') || typeof knex.client !== 'object') refuse(where, knex, NEEDS)
  const client = knex.client as unknown as KnexClient
  if (client.dialect !== 'postgresql') {
    throw new TypeError(`${where}: got a Knex instance on ${client.dialect ?? 'an unknown client'}; it needs ${NEEDS}`)
  }
  const alive = () => {
    if (client.pool === undefined) {
      throw new UnusableLibraryError(
        `${where}: the Knex instance has no pool (knex.destroy() was called); it needs a live one`,
      )
    }
  }
  alive()
  return bindPostgresStore<Knex.Transaction>(
    {
      name: where,
      poolSize: client.pool?.max ?? client.config?.pool?.max ?? 10,
      transaction: (work) => knex.transaction((trx) => work(trx)),
      async query(trx, text, values) {
        // The transaction's client lends its one connection (the pool's, were it not the transaction's: then Knex's).
        const transacting = trx.client as unknown as KnexClient & { transacting?: boolean }
        if (transacting.transacting !== true) return raw(trx, text, values)
        return (await transacting.acquireConnection()).query(text, values)
      },
      async run(text, values) {
        const connection = await client.acquireConnection()
        try {
          return await connection.query(text, values)
        } finally {
          await client.releaseConnection(connection)
        }
      },
      async session(work) {
        const connection = await client.acquireConnection()
        try {
          return await work((text, values) => connection.query(text, values))
        } finally {
          await client.releaseConnection(connection)
        }
      },
      check: alive,
    },
    options,
  )
}
