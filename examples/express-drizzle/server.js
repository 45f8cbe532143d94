// An Express app on Drizzle over PostgreSQL receiving the payment service's webhooks at POST /webhooks: the handler
// writes a settlement through context.db, Drizzle's transaction of the event, which commits with the event's done
// marker (drizzleStore), so a crash between the two leaves neither and the retry writes the row once.
import { realpathSync } from 'node:fs'
import { createWebhooks } from '@payhooks/core'
import { expressHealth, expressWebhooks } from '@payhooks/express'
import { drizzleStore } from '@payhooks/postgres/drizzle'
import { drizzle } from 'drizzle-orm/node-postgres'
import express from 'express'
import pg from 'pg'
import { createSettlementsSql, settlements } from './schema.js'

/**
 * The receiver on `pool` (a pg.Pool: Drizzle's, the store's and the handlers'), its settlements table made if missing.
 * @param {{ pool: pg.Pool, secret?: string, log?: (line: string) => void }} options
 */
export async function createReceiver({ pool, secret = process.env.WEBHOOK_SECRET || 'whsec_demo', log = console.log }) {
  await pool.query(createSettlementsSql)
  const db = drizzle(pool)
  const store = drizzleStore(db)
  const webhooks = createWebhooks({ secret, store })
  webhooks
    .on('transaction_settled', async (event, { db: tx }) => {
      const { transaction_id, settlement_amount, settlement_date } = event.data
      await tx.insert(settlements).values({
        transactionId: transaction_id,
        amount: settlement_amount,
        settledAt: settlement_date,
        eventId: event.event_id,
      })
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
  const app = express()
  app.post('/webhooks', expressWebhooks(webhooks))
  app.get('/ready', expressHealth(webhooks))
  app.use(express.json()) // the rest of the app parses JSON; the webhook route above still sees the raw bytes
  return app
}

if (process.argv[1] && realpathSync(process.argv[1]) === import.meta.filename) {
  const port = process.env.PORT ? Number(process.env.PORT) : 3000
  const host = process.env.HOST || '127.0.0.1'
  if (!process.env.DATABASE_URL) {
    console.error('DATABASE_URL is not set: postgres://user:password@host:5432/database')
    process.exit(1)
  }
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10, connectionTimeoutMillis: 2000 })
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
