import type { Pool } from 'pg'
import { bindPostgresStore } from './engine.js'
import { pgBinding } from './pg-session.js'
import type { PostgresStore, PostgresStoreOptions } from './types.js'

/** Pools already warned about (a store and a dead-letter store, or several receivers, often share one). */
const warnedPools = new WeakSet<Pool>()

/**
 * Without `connectionTimeoutMillis` a checkout waits for ever: on a pool the app shares, the app holding a client
 * while handlers wait for one through `context.db` and `pool.query` can wait on each other until every deadline.
 */
function warnWithoutConnectionTimeout(pool: Pool, logger: NonNullable<PostgresStoreOptions['logger']>): void {
  if (warnedPools.has(pool) || (pool.options?.connectionTimeoutMillis ?? 0) > 0) return
  warnedPools.add(pool)
  ;(logger.warn ?? logger.error).call(
    logger,
    '[payhooks] postgresStore: the pool has no connectionTimeoutMillis, so waiting for a client never ends: on a pool the app shares, a handler using both context.db and the pool can deadlock with the app holding a client, and a stuck database holds deliveries until their deadline. Fix: new pg.Pool({ ..., connectionTimeoutMillis: 2000 }) (well below deadlineMs).',
  )
}

/**
 * Dedupe store on PostgreSQL (node-postgres) whose handlers write in the same transaction as the event's done
 * marker, so a handler's effects and "handled" commit together or not at all: exactly-once effects, even when a
 * process dies between its write and its commit. A claim is a committed row with an owner token and a lease
 * (other deliveries answer 409 meanwhile, and `extend` renews it on another connection of the pool); then the
 * handlers run with `context.db`, a client checked out of the pool at its first query, inside `BEGIN`, and the row
 * is marked done by that transaction, only if the token still holds it, before `COMMIT`. Handlers that never use
 * `context.db` make it a plain dedupe store: no client is held while they run, no transaction is opened. It
 * advertises `maxConcurrentEvents` as the pool's `max - 1` (the receiver's default), so a burst of events leaves
 * the app a client. Takes your `pg.Pool` and never ends it.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { postgresStore } from '@payhooks/postgres'
 * import pg from 'pg'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 2000 })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: postgresStore(pool) })
 * webhooks.on('transaction_settled', async (event, { db }) => {
 *   await db.query('INSERT INTO settlements (transaction_id, amount) VALUES ($1, $2)', [
 *     event.data.transaction_id,
 *     event.data.settlement_amount,
 *   ])
 * })
 */
export function postgresStore(pool: Pool, options: PostgresStoreOptions = {}): PostgresStore {
  const store = bindPostgresStore(pgBinding(pool), { ...options, maxConcurrentEvents: undefined })
  warnWithoutConnectionTimeout(pool, options.logger ?? console)
  return store
}
