// postgresStore + postgresDeadLetterStore end to end on a real PostgreSQL: parked with a 2XX, replayed once the schema
// is fixed, written through context.db exactly once; and a database that cannot be reached.
import { createWebhooks, SchemaError, StoreError, transactionSettledSchema, type WebhookError } from '@payhooks/core'
import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import pg from 'pg'
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { freePort } from '../fixtures/own-redis.js'
import { admin, cleanUpAfterFile, newPool, pools, secret, tableName } from '../fixtures/postgres-dead-letters.js'

cleanUpAfterFile()

/** `transaction_settled` with `settlement_amount` as a decimal string, which the built-in schema refuses. */
const amountAsString = (id: string) =>
  sampleEvent('transaction_settled', { eventId: id, data: { settlement_amount: '10.30' } })

/** The release that fixes it: the amount as a number or a decimal string. */
const fixedSchemas = {
  transaction_settled: v.looseObject({
    ...transactionSettledSchema.entries,
    data: v.looseObject({
      ...transactionSettledSchema.entries.data.entries,
      settlement_amount: v.union([v.number(), v.pipe(v.string(), v.decimal(), v.transform(Number))]),
    }),
  }),
}

describe('postgresStore + postgresDeadLetterStore, end to end', () => {
  it('parks a schema mismatch with a 200; the fixed release replays it and its handler writes through context.db once', async () => {
    const events = tableName('events')
    const letters = tableName('letters')
    const ledger = tableName('ledger')
    await admin.query(`CREATE TABLE ${ledger} (event_id text NOT NULL, amount numeric NOT NULL)`)
    const { body, headers } = await signedDelivery(amountAsString('evt_e2e'), secret)
    const deliver = async (webhooks: { receive: ReturnType<typeof createWebhooks>['receive'] }) => {
      const answer = await webhooks.receive({
        method: 'POST',
        body,
        getHeader: (name) => (headers as Record<string, string>)[name],
      })
      return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> }
    }
    const ledgerRows = async () => (await admin.query(`SELECT event_id, amount::text FROM ${ledger}`)).rows

    // The release in production: its schema refuses the amount as a string.
    const firstPool = newPool()
    const errors: WebhookError[] = []
    const broken = createWebhooks({
      secret,
      store: postgresStore(firstPool, { table: events, sweepIntervalMs: 0 }),
      deadLetters: postgresDeadLetterStore(firstPool, { table: letters, sweepIntervalMs: 0 }),
    }).onError((error) => errors.push(error))
    let brokenRuns = 0
    broken.on('transaction_settled', async (event, { db }) => {
      brokenRuns++
      await db.query(`INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`, [
        event.event_id,
        event.data.settlement_amount,
      ])
    })
    expect(await deliver(broken)).toEqual({ status: 200, body: { ok: true, event_id: 'evt_e2e', status: 'parked' } })
    expect(errors.map((error) => error.constructor)).toEqual([SchemaError])
    const stored = await admin.query(`SELECT body, status, park_count FROM ${letters} WHERE event_id = 'evt_e2e'`)
    expect(stored.rows).toEqual([{ body: Buffer.from(body), status: 'parked', park_count: 1 }])
    expect((await broken.replay('evt_e2e')).status).toBe('failed') // not fixed yet: stays parked
    expect(brokenRuns).toBe(0)
    expect(await ledgerRows()).toEqual([])
    await broken.close()

    // The fixed release, another process on the same database.
    const fixedPool = newPool()
    const fixed = createWebhooks({
      secret,
      schemas: fixedSchemas,
      store: postgresStore(fixedPool, { table: events, sweepIntervalMs: 0 }),
      deadLetters: postgresDeadLetterStore(fixedPool, { table: letters, sweepIntervalMs: 0 }),
    })
    let fixedRuns = 0
    fixed.on('transaction_settled', async (event, { db }) => {
      fixedRuns++
      await db.query(`INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`, [
        event.event_id,
        event.data.settlement_amount,
      ])
    })
    expect((await fixed.deadLetters.list()).map((letter) => letter.eventId)).toEqual(['evt_e2e'])
    expect(await fixed.replay('evt_e2e')).toEqual({ eventId: 'evt_e2e', status: 'processed' })
    expect(await ledgerRows()).toEqual([{ event_id: 'evt_e2e', amount: '10.3' }])
    const after = await admin.query(`SELECT status, replayed_at IS NOT NULL AS replayed FROM ${letters}`)
    expect(after.rows).toEqual([{ status: 'replayed', replayed: true }])
    expect(await fixed.deadLetters.list()).toEqual([])

    // Nothing runs twice: another replay, a replay of everything, the same bytes delivered again.
    expect(await fixed.replay('evt_e2e')).toEqual({
      eventId: 'evt_e2e',
      status: 'duplicate',
      handledAt: (await fixed.deadLetters.get('evt_e2e'))?.replayedAt,
    })
    expect(await fixed.replayAll()).toEqual([])
    expect(await deliver(fixed)).toMatchObject({ status: 200, body: { status: 'duplicate' } })
    expect(fixedRuns).toBe(1)
    expect(await ledgerRows()).toEqual([{ event_id: 'evt_e2e', amount: '10.3' }])
    await fixed.close()
    expect((await fixedPool.query('SELECT 1 AS open')).rows).toEqual([{ open: 1 }]) // close() left the pool open
  })
})

describe('postgresDeadLetterStore without a reachable database', () => {
  it('answers a schema mismatch 422 as without dead letters, and reports a StoreError', async () => {
    const pool = new pg.Pool({
      host: '127.0.0.1',
      port: await freePort(),
      user: 'postgres',
      connectionTimeoutMillis: 500,
    })
    pools.push(pool)
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret, deadLetters: postgresDeadLetterStore(pool) }).onError((error) =>
      errors.push(error),
    )
    const { body, headers } = await signedDelivery(amountAsString('evt_down'), secret)
    const answer = await webhooks.receive({
      method: 'POST',
      body,
      getHeader: (name) => (headers as Record<string, string>)[name],
    })
    expect(answer.status).toBe(422)
    expect(JSON.parse(answer.body).error).toBe('schema_mismatch')
    expect(errors.map((error) => error.constructor)).toEqual([SchemaError, StoreError])
    expect(errors[1]?.message).toMatch(/^store dead-letter init failed/)
  })
})
