// postgresStore on a real PostgreSQL: the handlers' writes and the done marker commit together or not at all,
// the table's set-up (init, the shipped migration), the retention sweep, and a database that cannot be reached.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type StoreError, type WebhookError } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { signedDelivery } from '@payhooks/testing'
import pg from 'pg'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { settledBody } from '../fixtures/bodies.js'
import { freePort } from '../fixtures/own-redis.js'
import { databaseUrl, runMigration } from '../fixtures/postgres.js'

const DATABASE_URL = databaseUrl()
const secret = 'whsec_postgres_test'
const pools: pg.Pool[] = []
const tables: string[] = []
const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 2 })

function newPool(max = 4) {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max })
  pools.push(pool)
  return pool
}

/** A fresh store table and business table of this test. */
async function tablesOfTest() {
  const id = randomUUID().replaceAll('-', '').slice(0, 12)
  const store = `events_${id}`
  const ledger = `ledger_${id}`
  tables.push(store, ledger)
  await admin.query(`CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL, amount numeric)`)
  return { store, ledger }
}

function receiver(table: string, options: { leaseMs?: number; deadlineMs?: number; pool?: pg.Pool } = {}) {
  const errors: WebhookError[] = []
  const store = postgresStore(options.pool ?? newPool(), { table })
  const webhooks = createWebhooks({ secret, store, leaseMs: options.leaseMs, deadlineMs: options.deadlineMs })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, store }
}

async function deliver(webhooks: ReturnType<typeof receiver>['webhooks'], eventId: string) {
  const { body, headers } = await signedDelivery(settledBody(eventId), secret)
  const result = await webhooks.receive({
    method: 'POST',
    body,
    getHeader: (name) => (headers as Record<string, string>)[name],
  })
  return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
}

function gate() {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

const rowsOf = async (ledger: string) =>
  (await admin.query<{ event_id: string }>(`SELECT event_id FROM ${ledger} ORDER BY id`)).rows.map((r) => r.event_id)
const stateOf = async (table: string, eventId: string) =>
  (await admin.query<{ token: string | null }>(`SELECT token FROM ${table} WHERE event_id = $1`, [eventId])).rows[0]

afterAll(async () => {
  for (const table of tables) await admin.query(`DROP TABLE IF EXISTS ${table}`)
  await Promise.all([...pools, admin].map((pool) => pool.end()))
})

describe('postgresStore: writes and done marker in one transaction', () => {
  it('commits the handler’s writes with the done marker; a duplicate runs nothing', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const { webhooks, errors } = receiver(table)
    let runs = 0
    webhooks.on('transaction_settled', async (event, { db }) => {
      runs++
      await db.query(`INSERT INTO ${ledger} (event_id, amount) VALUES ($1, $2)`, [
        event.event_id,
        event.data.settlement_amount,
      ])
    })
    expect(await deliver(webhooks, 'evt_paid')).toMatchObject({ status: 200, body: { status: 'processed' } })
    expect(await deliver(webhooks, 'evt_paid')).toMatchObject({ status: 200, body: { status: 'duplicate' } })
    expect(runs).toBe(1)
    expect(await rowsOf(ledger)).toEqual(['evt_paid'])
    expect(await stateOf(table, 'evt_paid')).toEqual({ token: null })
    expect(errors).toEqual([])
  })

  it('rolls the writes back when a handler fails after writing, and the retry commits them once', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const { webhooks, errors } = receiver(table)
    let fail = true
    webhooks.on('transaction_settled', async (event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      if (fail) throw new Error('ledger rejected the settlement')
    })
    webhooks.onAny(async (event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [`${event.event_id}:audit`])
    })
    expect((await deliver(webhooks, 'evt_retry')).status).toBe(500)
    expect(await rowsOf(ledger)).toEqual([])
    expect(await stateOf(table, 'evt_retry')).toBeUndefined() // claim released
    fail = false
    expect((await deliver(webhooks, 'evt_retry')).status).toBe(200)
    expect((await rowsOf(ledger)).sort()).toEqual(['evt_retry', 'evt_retry:audit'])
    expect(errors.map((e) => e.code)).toEqual(['handler_failed'])
  })

  it('rolls the writes back and answers 503 when the claim was lost before the commit', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const { webhooks, errors } = receiver(table, { leaseMs: 900, deadlineMs: 800 })
    let aborted: unknown
    const stolen = gate()
    webhooks.on('transaction_settled', async (event, { db, signal }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      // Another delivery takes the event over (as after a lease that ran out); this run ignores being told.
      await admin.query(`UPDATE ${table} SET token = 'other-delivery' WHERE event_id = $1`, [event.event_id])
      stolen.open()
      await new Promise((resolve) => signal.addEventListener('abort', resolve))
      aborted = signal.reason
    })
    const answer = await deliver(webhooks, 'evt_stolen')
    await stolen.promise
    expect(answer).toMatchObject({ status: 503, body: { error: 'store_unavailable' } })
    expect((aborted as StoreError).code).toBe('store_unavailable')
    expect(await rowsOf(ledger)).toEqual([])
    expect(await stateOf(table, 'evt_stolen')).toEqual({ token: 'other-delivery' })
    expect(errors.map((e) => e.message)).toEqual([
      'store extend failed for evt_stolen: claim lost: its lease ran out and another delivery took it',
      "store complete failed for evt_stolen: claim lost before commit (its renewal failed, or close() released it); the handlers' writes were rolled back and a retry runs them again",
    ])
  })

  it('answers 503 and releases the claim when a handler swallowed an SQL error (the transaction cannot commit)', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const { webhooks, errors } = receiver(table)
    let swallow = true
    webhooks.on('transaction_settled', async (event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      if (swallow) await db.query('SELECT no_such_column FROM pg_class').catch(() => {})
    })
    expect((await deliver(webhooks, 'evt_swallowed')).status).toBe(503)
    expect(errors[0]?.message).toMatch(/^store transaction failed for evt_swallowed: current transaction is aborted/)
    expect(await rowsOf(ledger)).toEqual([])
    swallow = false
    expect((await deliver(webhooks, 'evt_swallowed')).status).toBe(200)
    expect(await rowsOf(ledger)).toEqual(['evt_swallowed'])
  })

  it('works as a plain dedupe store for handlers that never touch context.db', async () => {
    const { store: table } = await tablesOfTest()
    const { webhooks, errors } = receiver(table)
    const seen: string[] = []
    webhooks.onAny((event) => {
      seen.push(event.event_id)
    })
    expect((await deliver(webhooks, 'evt_plain')).body.status).toBe('processed')
    expect((await deliver(webhooks, 'evt_plain')).body.status).toBe('duplicate')
    expect(seen).toEqual(['evt_plain'])
    expect(await stateOf(table, 'evt_plain')).toEqual({ token: null })
    expect(errors).toEqual([])
  })

  it('renews the claim on another connection while the transaction stays open (a pool of two)', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const first = receiver(table, { leaseMs: 300, deadlineMs: 100, pool: newPool(2) })
    const other = receiver(table, { leaseMs: 300, deadlineMs: 100 })
    let runs = 0
    const release = gate()
    first.webhooks.onAny(async (event, { db }) => {
      runs++
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      await release.promise
    })
    other.webhooks.onAny(() => {
      runs++
    })
    const answered = deliver(first.webhooks, 'evt_long')
    await vi.waitFor(() => expect(runs).toBe(1))
    const started = Date.now()
    const statuses = new Set<number>()
    while (Date.now() < started + 900) {
      statuses.add((await deliver(other.webhooks, 'evt_long')).status)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    release.open()
    expect((await answered).status).toBe(503) // deadline; the handler went on
    expect(statuses).toEqual(new Set([409]))
    await vi.waitFor(async () => expect(await stateOf(table, 'evt_long')).toEqual({ token: null }))
    expect((await deliver(other.webhooks, 'evt_long')).body.status).toBe('duplicate')
    expect(runs).toBe(1)
    expect(await rowsOf(ledger)).toEqual(['evt_long'])
  })
})

describe('postgresStore: table and retention', () => {
  it('works on the table the shipped migrations create, with createTable: false, and init() makes the same table', async () => {
    const schema = `mig_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    try {
      await runMigration(admin, schema, '001_payhooks_events.sql')
      await runMigration(admin, schema, '004_payhooks_events_body_digest.sql')
      const migrated = postgresStore(newPool(), { table: `${schema}.payhooks_events`, createTable: false })
      await migrated.init()
      const claim = await migrated.claim('evt_migrated', 60_000)
      if (claim.status !== 'claimed') throw new Error('expected a claim')
      expect(await migrated.complete('evt_migrated', claim.token)).toBe(true)

      const created = postgresStore(newPool(), { table: `${schema}.created_by_init` })
      await created.init()
      const columns = async (name: string) =>
        (
          await admin.query(
            `SELECT column_name, data_type, is_nullable FROM information_schema.columns
             WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
            [schema, name],
          )
        ).rows
      expect(await columns('payhooks_events')).toEqual(await columns('created_by_init'))
      expect(await columns('payhooks_events')).toHaveLength(4)

      await expect(postgresStore(newPool(), { table: `${schema}.missing`, createTable: false }).init()).rejects.toThrow(
        /does not exist/,
      )
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    }
  })

  it('sweeps rows past their expiry (done markers past retention, claims long expired), keeping the rest', async () => {
    const { store: table } = await tablesOfTest()
    const store = postgresStore(newPool(), { table, sweepIntervalMs: 0 })
    await store.init()
    const handled = async (eventId: string) => {
      const claim = await store.claim(eventId, 60_000)
      if (claim.status !== 'claimed') throw new Error('expected a claim')
      await store.complete(eventId, claim.token)
    }
    await handled('evt_old')
    await handled('evt_recent')
    await store.claim('evt_running', 60_000)
    await store.claim('evt_crashed', 60_000)
    await admin.query(
      `UPDATE ${table} SET expires_at = clock_timestamp() - interval '1 second' WHERE event_id IN ('evt_old', 'evt_crashed')`,
    )
    expect(await store.sweep()).toBe(2)
    const left = (await admin.query(`SELECT event_id FROM ${table} ORDER BY event_id`)).rows.map((r) => r.event_id)
    expect(left).toEqual(['evt_recent', 'evt_running'])
    expect(await store.claim('evt_recent', 60_000)).toEqual({ status: 'done' })
    expect(await store.claim('evt_old', 60_000)).toMatchObject({ status: 'claimed' })
  })

  it('sweeps in the background every sweepIntervalMs once initialised, until shutdown', async () => {
    const { store: table } = await tablesOfTest()
    const store = postgresStore(newPool(), { table, sweepIntervalMs: 50 })
    await store.init()
    const claim = await store.claim('evt_expiring', 60_000)
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    await store.complete('evt_expiring', claim.token)
    await admin.query(`UPDATE ${table} SET expires_at = clock_timestamp() - interval '1 second'`)
    await vi.waitFor(async () => expect((await admin.query(`SELECT 1 FROM ${table}`)).rowCount).toBe(0))
    store.shutdown()
    await store.claim('evt_after_shutdown', 1)
    await admin.query(`UPDATE ${table} SET expires_at = clock_timestamp() - interval '1 second'`)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await admin.query(`SELECT 1 FROM ${table}`)).rowCount).toBe(1)
  })
})

describe('postgresStore without a reachable database', () => {
  it('answers 503 and runs no handler', async () => {
    const pool = new pg.Pool({
      host: '127.0.0.1',
      port: await freePort(),
      user: 'postgres',
      connectionTimeoutMillis: 500,
    })
    pools.push(pool)
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({ secret, store: postgresStore(pool) }).onError((error) => errors.push(error))
    const handler = vi.fn()
    webhooks.onAny(handler)
    expect((await deliver(webhooks, 'evt_down')).status).toBe(503)
    expect(handler).not.toHaveBeenCalled()
    expect(errors[0]?.code).toBe('store_unavailable')
    expect(errors[0]?.message).toMatch(/^store init failed for evt_down: /)
  })
})
