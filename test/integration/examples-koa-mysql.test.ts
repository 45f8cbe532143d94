// examples/koa-mysql on the real MariaDB (MYSQL_URL), in a database of its own: a signed delivery is handled and its
// handler's ledger row, written through context.db (the PoolConnection of the event's transaction), commits with the
// event's done marker; the service's retried copy is a duplicate that writes nothing; a handler that fails after
// writing leaves no row, and the retry writes it once. Then the entry point itself (node server.js on MYSQL_URL)
// serves a delivery.
import { randomUUID } from 'node:crypto'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import mysql from 'mysql2/promise'
import request from 'supertest'
import { afterAll, describe, expect, it } from 'vitest'
import { createApp, createReceiver } from '../../examples/koa-mysql/server.js'
import { listen } from '../fixtures/apps.js'
import { startExample } from '../fixtures/example-process.js'
import { mysqlUrl } from '../fixtures/mysql.js'

const secret = 'whsec_example_koa_mysql'
const database = `example_koa_${randomUUID().slice(0, 8)}`
const admin = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 2 })
await admin.query(`CREATE DATABASE ${database}`)
const url = new URL(mysqlUrl())
url.pathname = `/${database}`
// The app's pool, its tables (ledger, payhooks_events) in the test's database.
const pool = mysql.createPool({ uri: url.href, connectionLimit: 6 })
const closers: (() => Promise<unknown>)[] = []
afterAll(async () => {
  for (const close of closers.reverse()) await close()
  await pool.end()
  await admin.query(`DROP DATABASE ${database}`)
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
  (await admin.query(`SELECT event_id, amount FROM ${database}.ledger WHERE transaction_id = ?`, [transactionId]))[0]
const marker = async (eventId: string) =>
  (
    (await admin.query(`SELECT token IS NULL AS done FROM ${database}.payhooks_events WHERE event_id = ?`, [
      eventId,
    ])) as [Record<string, unknown>[], unknown]
  )[0][0]

describe('examples/koa-mysql', () => {
  it('handles a delivery, its row committed with the done marker; the retried copy is a duplicate', async () => {
    const lines: string[] = []
    const webhooks = await createReceiver({ pool, secret, log: (line) => lines.push(line) })
    closers.push(() => webhooks.close())
    const served = await listen(createApp({ webhooks }).callback())
    closers.push(served.close)
    const agent = request(served.server)
    const { body, headers } = await settled('evt_koa_mysql_1', 'txn_koa_mysql_1')

    const first = await agent.post('/webhooks').set(headers).send(body)
    expect(first.status).toBe(200)
    expect(JSON.parse(first.text)).toMatchObject({ status: 'processed' })
    expect(await rowsOf('txn_koa_mysql_1')).toEqual([{ event_id: 'evt_koa_mysql_1', amount: 10.3 }])
    expect(await marker('evt_koa_mysql_1')).toEqual({ done: 1 })

    const retried = await agent.post('/webhooks').set(headers).send(body)
    expect(retried.status).toBe(200)
    expect(JSON.parse(retried.text)).toMatchObject({ status: 'duplicate' })
    expect(await rowsOf('txn_koa_mysql_1')).toHaveLength(1)
    expect(lines.filter((line) => line.includes('evt_koa_mysql_1'))).toHaveLength(1)
  })

  it('leaves no row when a handler fails after the write, and the retry writes it once', async () => {
    const webhooks = await createReceiver({ pool, secret, log: () => {} })
    closers.push(() => webhooks.close())
    let fail = true
    webhooks.onAny(async () => {
      if (fail) throw new Error('the ledger is down')
    })
    const served = await listen(createApp({ webhooks }).callback())
    closers.push(served.close)
    const agent = request(served.server)
    const { body, headers } = await settled('evt_koa_mysql_2', 'txn_koa_mysql_2')

    expect((await agent.post('/webhooks').set(headers).send(body)).status).toBe(500)
    expect(await rowsOf('txn_koa_mysql_2')).toEqual([])
    expect(await marker('evt_koa_mysql_2')).toBeUndefined()
    fail = false
    expect((await agent.post('/webhooks').set(headers).send(body)).status).toBe(200)
    expect(await rowsOf('txn_koa_mysql_2')).toEqual([{ event_id: 'evt_koa_mysql_2', amount: 10.3 }])
    expect(await marker('evt_koa_mysql_2')).toEqual({ done: 1 })
  })

  it('runs as `node server.js` on MYSQL_URL: a delivery handled, its row written', async () => {
    const address = await startExample('koa-mysql', { MYSQL_URL: url.href, WEBHOOK_SECRET: secret }, closers)
    expect(address).toBeDefined()
    const { body, headers } = await settled('evt_koa_mysql_3', 'txn_koa_mysql_3')
    const answer = await fetch(`${address}/webhooks`, { method: 'POST', headers, body })
    expect(answer.status).toBe(200)
    expect(await rowsOf('txn_koa_mysql_3')).toEqual([{ event_id: 'evt_koa_mysql_3', amount: 10.3 }])
  })
})
