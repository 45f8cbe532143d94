// A handler that catches an SQL error inside context.db (issue 21, item 3): the transaction is left aborted, so the
// event fails as a handler failure (500, its cause a TransactionAbortedError naming the caught error), is parked on
// the service's last tries like any handler failure, and a handler that catches inside a SAVEPOINT commits.
import { randomUUID } from 'node:crypto'
import { createWebhooks, LAST_TRIES_AFTER_MS, type WebhookError } from '@payhooks/core'
import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { describe, expect, it } from 'vitest'
import { deliverSettled, postgresHarness } from '../fixtures/postgres-harness.js'

const secret = 'whsec_sql_errors_test'
const { admin, newPool, tablesOfTest, rowsOf, stateOf } = postgresHarness()
const UNIQUE_LEDGER = 'event_id text NOT NULL UNIQUE, amount numeric'

async function receiver(withDeadLetters = false) {
  const { store: table, ledger } = await tablesOfTest(UNIQUE_LEDGER)
  const pool = newPool()
  const deadLetterTable = `dl_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  const deadLetters = withDeadLetters ? postgresDeadLetterStore(pool, { table: deadLetterTable }) : undefined
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({ secret, store: postgresStore(pool, { table }), deadLetters })
  webhooks.onError((error) => errors.push(error))
  // The row the handlers collide with: already in the ledger.
  await admin.query(`INSERT INTO ${ledger} (event_id) VALUES ('txn_taken')`)
  return { webhooks, errors, table, ledger, deadLetterTable }
}

const caughtMessage = (constraint: string) =>
  `a handler caught an SQL error inside context.db (duplicate key value violates unique constraint "${constraint}"), which left the transaction aborted, so nothing was committed; catch SQL errors inside a SAVEPOINT (ROLLBACK TO SAVEPOINT), or let them propagate`

describe('postgresStore: a handler that catches an SQL error inside context.db', () => {
  it('fails the event as a handler failure (500 handler_failed, transaction_aborted), not 503, and releases the claim', async () => {
    const { webhooks, errors, table, ledger } = await receiver()
    webhooks.on('transaction_settled', async (event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      try {
        await db.query(`INSERT INTO ${ledger} (event_id) VALUES ('txn_taken')`)
      } catch {
        // "already recorded": the handler carries on, but the transaction is aborted.
      }
    })
    const answer = await deliverSettled(webhooks, 'evt_caught', secret)
    expect(answer).toMatchObject({ status: 500, body: { error: 'handler_failed' } })
    expect(errors.map((e) => e.code)).toEqual(['handler_failed'])
    expect(errors[0]?.message).toBe(
      `handler failed for transaction_settled evt_caught: ${caughtMessage(`${ledger}_event_id_key`)}`,
    )
    expect(errors[0]?.cause).toMatchObject({ code: 'transaction_aborted', cause: { code: '23505' } })
    expect(await rowsOf(ledger)).toEqual(['txn_taken'])
    expect(await stateOf(table, 'evt_caught')).toBeUndefined()
  })

  it('parks it on the service’s last tries (200 parked), like any handler failure', async () => {
    const { webhooks, errors, ledger, deadLetterTable } = await receiver(true)
    webhooks.on('transaction_settled', async (_event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ('txn_taken')`).catch(() => {})
    })
    const createdAt = new Date(Date.now() - LAST_TRIES_AFTER_MS - 60_000).toISOString()
    const answer = await deliverSettled(webhooks, 'evt_last_try', secret, createdAt)
    expect(answer).toMatchObject({ status: 200, body: { status: 'parked' } })
    expect(errors.map((e) => e.code)).toEqual(['handler_failed'])
    const letter = await admin.query(`SELECT code, reason FROM ${deadLetterTable} WHERE event_id = 'evt_last_try'`)
    expect(letter.rows).toEqual([
      {
        code: 'handler_failed',
        reason: `handler failed for transaction_settled evt_last_try: ${caughtMessage(`${ledger}_event_id_key`)}`,
      },
    ])
    await admin.query(`DROP TABLE ${deadLetterTable}`)
  })

  it('commits when the handler catches inside a SAVEPOINT, as the README shows', async () => {
    const { webhooks, errors, table, ledger } = await receiver()
    webhooks.on('transaction_settled', async (event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      await db.query('SAVEPOINT before_audit')
      try {
        await db.query(`INSERT INTO ${ledger} (event_id) VALUES ('txn_taken')`)
        await db.query('RELEASE SAVEPOINT before_audit')
      } catch {
        await db.query('ROLLBACK TO SAVEPOINT before_audit')
      }
    })
    expect((await deliverSettled(webhooks, 'evt_savepoint', secret)).body.status).toBe('processed')
    expect(errors).toEqual([])
    expect(await rowsOf(ledger)).toEqual(['txn_taken', 'evt_savepoint'])
    expect(await stateOf(table, 'evt_savepoint')).toEqual({ token: null })
  })
})
