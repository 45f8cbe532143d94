// A Koa app on MySQL or MariaDB receiving the payment service's webhooks at POST /webhooks: the handler writes a
// ledger row through context.db, the PoolConnection of the event's transaction, which commits with the event's done
// marker (mysqlStore), so a crash between the two leaves neither and the retry writes the row once.
import { realpathSync } from 'node:fs'
import Router from '@koa/router'
import { createWebhooks } from '@payhooks/core'
import { koaHealth, koaWebhooks } from '@payhooks/koa'
import { mysqlStore } from '@payhooks/mysql'
import Koa from 'koa'
import mysql from 'mysql2/promise'
import { createLedgerSql } from './schema.js'

/**
 * The receiver on `pool` (a mysql2/promise Pool: the store's and the handlers'), its ledger table made if missing.
 * @param {{ pool: mysql.Pool, secret?: string, log?: (line: string) => void }} options
 */
export async function createReceiver({ pool, secret = process.env.WEBHOOK_SECRET || 'whsec_demo', log = console.log }) {
  await pool.query(createLedgerSql)
  const store = mysqlStore(pool)
  const webhooks = createWebhooks({ secret, store })
  webhooks
    .on('transaction_settled', async (event, { db }) => {
      const { transaction_id, settlement_amount, settlement_date } = event.data
      await db.query('INSERT INTO ledger (transaction_id, amount, settled_at, event_id) VALUES (?, ?, ?, ?)', [
        transaction_id,
        settlement_amount,
        settlement_date,
        event.event_id,
      ])
      log(`${event.event_type} ${event.event_id}: ${transaction_id} settled ${settlement_amount}`)
    })
    .onError((error) => log(`rejected (${error.status} ${error.code}): ${error.message}`))
  await store.init() // the store's table, made if missing
  return webhooks
}

/**
 * The app, receiving at POST /webhooks with `webhooks`.
 * @param {{ webhooks: Awaited<ReturnType<typeof createReceiver>> }} options
 */
export function createApp({ webhooks }) {
  const router = new Router()
  router.post('/webhooks', koaWebhooks(webhooks))
  router.get('/ready', koaHealth(webhooks))
  return new Koa().use(router.routes()).use(router.allowedMethods())
}

if (process.argv[1] && realpathSync(process.argv[1]) === import.meta.filename) {
  const port = process.env.PORT ? Number(process.env.PORT) : 3000
  const host = process.env.HOST || '127.0.0.1'
  if (!process.env.MYSQL_URL) {
    console.error('MYSQL_URL is not set: mysql://user:password@host:3306/database')
    process.exit(1)
  }
  const pool = mysql.createPool({ uri: process.env.MYSQL_URL, connectionLimit: 10, connectTimeout: 2000 })
  const webhooks = await createReceiver({ pool })
  const server = createApp({ webhooks }).listen(port, host, () => {
    console.log(`listening on http://${host}:${server.address().port}/webhooks`)
  })
  process.once('SIGTERM', async () => {
    webhooks.drain()
    await new Promise((resolve) => server.close(resolve))
    await webhooks.close({ timeoutMs: 8000 })
    await pool.end()
    process.exit(0)
  })
}
