// examples/express-drizzle on the real PostgreSQL, in a schema of its own: a signed delivery is handled and its
// handler's row, written through context.db (Drizzle's transaction), commits with the event's done marker; the
// service's retried copy is a duplicate that writes nothing; a handler that fails after writing leaves no row, and the
// retry writes it once. Then the entry point itself (node server.js on DATABASE_URL) serves a delivery.
import { randomUUID } from 'node:crypto'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import pg from 'pg'
import request from 'supertest'
import { afterAll, describe, expect, it } from 'vitest'
import { createApp, createReceiver } from '../../examples/express-drizzle/server.js'
import { listen } from '../fixtures/apps.js'
import { startExample } from '../fixtures/example-process.js'
import { databaseUrl } from '../fixtures/postgres.js'

const secret = 'whsec_example_drizzle'
const schema = `example_drizzle_${randomUUID().slice(0, 8)}`
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 })
await admin.query(`CREATE SCHEMA ${schema}`)
// The app's pool, its tables (settlements, payhooks_events) in the test's schema.
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 6, options: `-c search_path=${schema}` })
const closers: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const close of closers.reverse()) await close()
  await pool.end()
  await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  await admin.end()
})

const settled = (eventId: string, transactionId: string) =>
  signedDelivery(
    sampleEvent('transaction_settled', {
      eventId,
      data: { transaction_id: transactionId, settlement_amount: 10.3 },
    }),
    secret,
  )
const rowsOf = async (transactionId: string) =>
  (await admin.query(`SELECT event_id, amount FROM ${schema}.settlements WHERE transaction_id = $1`, [transactionId]))
    .rows
const marker = async (eventId: string) =>
  (await admin.query(`SELECT token IS NULL AS done FROM ${schema}.payhooks_events WHERE event_id = $1`, [eventId]))
    .rows[0]

describe('examples/express-drizzle', () => {
  it('handles a delivery, its row committed with the done marker; the retried copy is a duplicate', async () => {
    const lines: string[] = []
    const webhooks = await createReceiver({ pool, secret, log: (line) => lines.push(line) })
    closers.push(() => webhooks.close())
    const served = await listen(createApp({ webhooks }))
    closers.push(served.close)
    const agent = request(served.server)
    const { body, headers } = await settled('evt_drizzle_1', 'txn_drizzle_1')

    const first = await agent.post('/webhooks').set(headers).send(body)
    expect(first.status).toBe(200)
    expect(JSON.parse(first.text)).toMatchObject({ status: 'processed' })
    expect(await rowsOf('txn_drizzle_1')).toEqual([{ event_id: 'evt_drizzle_1', amount: 10.3 }])
    expect(await marker('evt_drizzle_1')).toEqual({ done: true })

    const retried = await agent.post('/webhooks').set(headers).send(body)
    expect(retried.status).toBe(200)
    expect(JSON.parse(retried.text)).toMatchObject({ status: 'duplicate' })
    expect(await rowsOf('txn_drizzle_1')).toHaveLength(1)
    expect(lines.filter((line) => line.includes('evt_drizzle_1'))).toHaveLength(1)
  })

  it('leaves no row when a handler fails after the write, and the retry writes it once', async () => {
    const webhooks = await createReceiver({ pool, secret, log: () => {} })
    closers.push(() => webhooks.close())
    let fail = true
    webhooks.onAny(async () => {
      if (fail) throw new Error('the ledger is down')
    })
    const served = await listen(createApp({ webhooks }))
    closers.push(served.close)
    const agent = request(served.server)
    const { body, headers } = await settled('evt_drizzle_2', 'txn_drizzle_2')

    expect((await agent.post('/webhooks').set(headers).send(body)).status).toBe(500)
    expect(await rowsOf('txn_drizzle_2')).toEqual([])
    expect(await marker('evt_drizzle_2')).toBeUndefined()
    fail = false
    expect((await agent.post('/webhooks').set(headers).send(body)).status).toBe(200)
    expect(await rowsOf('txn_drizzle_2')).toEqual([{ event_id: 'evt_drizzle_2', amount: 10.3 }])
    expect(await marker('evt_drizzle_2')).toEqual({ done: true })
  })

  it('runs as `node server.js` on DATABASE_URL: a delivery handled, its row written', async () => {
    const url = new URL(databaseUrl())
    url.searchParams.set('options', `-c search_path=${schema}`)
    const address = await startExample('express-drizzle', { DATABASE_URL: url.href, WEBHOOK_SECRET: secret }, closers)
    expect(address).toBeDefined()
    const { body, headers } = await settled('evt_drizzle_3', 'txn_drizzle_3')
    const answer = await fetch(`${address}/webhooks`, { method: 'POST', headers, body })
    expect(answer.status).toBe(200)
    expect(await rowsOf('txn_drizzle_3')).toEqual([{ event_id: 'evt_drizzle_3', amount: 10.3 }])
  })
})
