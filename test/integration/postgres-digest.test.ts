// postgresStore's body digests on a real PostgreSQL: a table made before the body_digest column keeps working
// (init adds it, or without it the store works as before), the shipped migration 004, and the transaction path
// writing the marker with the claim's digest.
import { createHash, randomUUID } from 'node:crypto'
import { createWebhooks, type EventConflictError, type WebhookError } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { databaseUrl, runMigration } from '../fixtures/postgres.js'

const secret = 'whsec_postgres_digest_test'
const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 })
const pools: pg.Pool[] = []
const schemas: string[] = []
const sha = (body: string) => createHash('sha256').update(body).digest('hex').slice(0, 32)

afterAll(async () => {
  await Promise.all(pools.map((pool) => pool.end()))
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await admin.end()
})

/** A schema of this test holding the store table as migration 001 made it, before body_digest. */
async function tableBeforeDigests(): Promise<string> {
  const schema = `digest_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  schemas.push(schema)
  await admin.query(`CREATE SCHEMA ${schema}`)
  await runMigration(admin, schema, '001_payhooks_events.sql')
  return schema
}

/** Two copies of one event: the bytes the service sent first, and other bytes under the same event_id. */
function copies() {
  const event = sampleEvent('transaction_settled', { eventId: `evt_${randomUUID()}` })
  const first = JSON.stringify(event)
  const other = JSON.stringify({ ...event, data: { ...(event.data as object), settlement_amount: 1 } })
  return { eventId: event.event_id as string, first, other }
}

function receiver(table: string, options: { createTable?: boolean; warnings?: string[] } = {}) {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4, connectionTimeoutMillis: 2000 })
  pools.push(pool)
  const logger = {
    warn: (line: string) => options.warnings?.push(line),
    error: (line: string) => options.warnings?.push(line),
  }
  const store = postgresStore(pool, { table, createTable: options.createTable, logger })
  const webhooks = createWebhooks({ secret, store })
  const errors: WebhookError[] = []
  webhooks.onError((error) => errors.push(error))
  const deliver = async (body: string) => {
    const { headers } = await signedDelivery(body, secret)
    const answer = await webhooks.receive({ body, getHeader: (name) => (headers as Record<string, string>)[name] })
    return { status: answer.status, outcome: (JSON.parse(answer.body) as { status?: string }).status }
  }
  return { webhooks, store, errors, deliver, pool }
}

describe('postgresStore: body digests', () => {
  it('keeps working on a table made before them: init adds the column, and old markers stay plain duplicates', async () => {
    const schema = await tableBeforeDigests()
    const table = `${schema}.payhooks_events`
    const old = copies()
    // A done marker written by an earlier version: no digest.
    await admin.query(
      `INSERT INTO ${table} (event_id, token, expires_at) VALUES ($1, NULL, now() + interval '1 hour')`,
      [old.eventId],
    )
    const { deliver, errors } = receiver(table)
    expect(await deliver(old.other)).toEqual({ status: 200, outcome: 'duplicate' })
    expect(errors).toEqual([])

    const fresh = copies()
    expect(await deliver(fresh.first)).toEqual({ status: 200, outcome: 'processed' })
    expect(await deliver(fresh.first)).toEqual({ status: 200, outcome: 'duplicate' })
    expect(errors).toEqual([])
    expect(await deliver(fresh.other)).toEqual({ status: 200, outcome: 'duplicate' })
    expect(errors.map((error) => error.code)).toEqual(['event_conflict'])
    expect(errors[0]).toMatchObject({ receivedDigest: sha(fresh.other), handledDigest: sha(fresh.first) })
  })

  it('without the column and createTable: false, works as before, warns once, and reports no conflict', async () => {
    const schema = await tableBeforeDigests()
    const table = `${schema}.payhooks_events`
    const warnings: string[] = []
    const before = receiver(table, { createTable: false, warnings })
    const event = copies()
    expect(await before.deliver(event.first)).toEqual({ status: 200, outcome: 'processed' })
    expect(await before.deliver(event.other)).toEqual({ status: 200, outcome: 'duplicate' })
    expect(before.errors).toEqual([])
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('004_payhooks_events_body_digest.sql')

    // The shipped migration 004, as a migration tool would run it; then a restarted receiver reports conflicts.
    await runMigration(admin, schema, '004_payhooks_events_body_digest.sql')
    const after = receiver(table, { createTable: false, warnings })
    const next = copies()
    expect(await after.deliver(next.first)).toEqual({ status: 200, outcome: 'processed' })
    expect(await after.deliver(next.other)).toEqual({ status: 200, outcome: 'duplicate' })
    expect(after.errors.map((error) => error.code)).toEqual(['event_conflict'])
    expect(warnings).toHaveLength(1)
  })

  it('commits the claim’s digest with the done marker in the handlers’ transaction', async () => {
    const schema = await tableBeforeDigests()
    const table = `${schema}.payhooks_events`
    await admin.query(`CREATE TABLE ${schema}.ledger (event_id text PRIMARY KEY)`)
    const { webhooks, deliver, errors } = receiver(table)
    webhooks.on('transaction_settled', async (event, { db }) => {
      await db.query(`INSERT INTO ${schema}.ledger (event_id) VALUES ($1)`, [event.event_id])
    })
    const event = copies()
    expect(await deliver(event.first)).toEqual({ status: 200, outcome: 'processed' })
    const { rows } = await admin.query(`SELECT token, body_digest FROM ${table} WHERE event_id = $1`, [event.eventId])
    expect(rows).toEqual([{ token: null, body_digest: sha(event.first) }])
    expect(await deliver(event.other)).toEqual({ status: 200, outcome: 'duplicate' })
    const [conflict] = errors as EventConflictError[]
    expect(conflict).toMatchObject({ code: 'event_conflict', handledDigest: sha(event.first) })
    expect((await admin.query(`SELECT count(*)::int AS n FROM ${schema}.ledger`)).rows).toEqual([{ n: 1 }])
  })
})
