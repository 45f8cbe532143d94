// postgresStore on a real PostgreSQL: the handlers' writes and the done marker commit together or not at all,
// the table's set-up (init, the shipped migration), the retention sweep, and a database that cannot be reached.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type StoreError, type WebhookError } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import type pg from 'pg'
import { describe, expect, it, vi } from 'vitest'
import { freePort } from '../fixtures/own-redis.js'
import { runMigration, sweptBy } from '../fixtures/postgres.js'
import { deliverSettled, gate, postgresHarness } from '../fixtures/postgres-harness.js'

const secret = 'whsec_postgres_test'
const { admin, newPool, tablesOfTest, rowsOf, stateOf } = postgresHarness()

function receiver(table: string, options: { leaseMs?: number; deadlineMs?: number; pool?: pg.Pool } = {}) {
  const errors: WebhookError[] = []
  const store = postgresStore(options.pool ?? newPool(), { table })
  const webhooks = createWebhooks({ secret, store, leaseMs: options.leaseMs, deadlineMs: options.deadlineMs })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, store }
}

const deliver = (webhooks: ReturnType<typeof receiver>['webhooks'], eventId: string) =>
  deliverSettled(webhooks, eventId, secret)

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
    // The loss is found by the first renewal, a third of the lease in (1.5 s); then the commit fails, and the answer
    // says so. The deadline leaves those two queries 2.9 s (at a 900 ms lease and 800 ms deadline a loaded CI
    // machine answered deadline_exceeded first; at 2.4 s and 2.3 s, 1.5 s of room).
    const { webhooks, errors } = receiver(table, { leaseMs: 4500, deadlineMs: 4400 })
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
      "store complete failed for evt_stolen: claim lost before commit (its lease ran out, as for a process frozen past it, and another delivery may have taken its event or ordering key); the handlers' writes were rolled back and a retry runs them again",
    ])
  })

  it('answers 500 transaction_aborted and releases the claim when a handler swallowed an SQL error', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const { webhooks, errors } = receiver(table)
    let swallow = true
    webhooks.on('transaction_settled', async (event, { db }) => {
      await db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      if (swallow) await db.query('SELECT no_such_column FROM pg_class').catch(() => {})
    })
    const answer = await deliver(webhooks, 'evt_swallowed')
    expect(answer).toMatchObject({ status: 500, body: { error: 'handler_failed' } })
    expect(errors.map((e) => e.code)).toEqual(['handler_failed'])
    expect(errors[0]?.message).toBe(
      'handler failed for transaction_settled evt_swallowed: a handler caught an SQL error inside context.db (column "no_such_column" does not exist), which left the transaction aborted, so nothing was committed; catch SQL errors inside a SAVEPOINT (ROLLBACK TO SAVEPOINT), or let them propagate',
    )
    expect(errors[0]?.cause).toMatchObject({ name: 'TransactionAbortedError', code: 'transaction_aborted' })
    expect(await rowsOf(ledger)).toEqual([])
    expect(await stateOf(table, 'evt_swallowed')).toBeUndefined() // claim released
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
    // A lease a loaded machine renews in time: renewed every second, a renewal may come 2 s late. At 300 and 800 ms,
    // CI's other work (two vitest processes and their TypeScript builds on 2 cores) now and then held a renewal past
    // the lease's last third, the run gave the lease up and the other receiver took the event (the transaction then
    // rolled back: the ledger still had one row).
    const leaseMs = 3000
    const first = receiver(table, { leaseMs, deadlineMs: 100, pool: newPool(2) })
    // The other receiver's deadline leaves a claim query on a loaded machine seconds (at 100 ms, and even at 1 s,
    // one could be answered 503 deadline_exceeded), so each retry shows what the store answered.
    const other = receiver(table, { leaseMs, deadlineMs: leaseMs - 100 })
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
    await vi.waitFor(() => expect(runs).toBe(1), { timeout: 10_000, interval: 20 })
    const started = Date.now()
    // Retries every 200 ms, the last one sent past 1.2 leases: after the first renewal past the claim's first lease.
    const statuses = new Set<number>()
    for (let sentAt = 0; sentAt < started + 1.2 * leaseMs; ) {
      await new Promise((resolve) => setTimeout(resolve, 200))
      sentAt = Date.now()
      statuses.add((await deliver(other.webhooks, 'evt_long')).status)
    }
    release.open()
    expect((await answered).status).toBe(503) // deadline; the handler went on
    expect(statuses).toEqual(new Set([409]))
    await vi.waitFor(async () => expect(await stateOf(table, 'evt_long')).toEqual({ token: null }), {
      timeout: 10_000,
    })
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
      await runMigration(admin, schema, '005_payhooks_events_fences.sql')
      await runMigration(admin, schema, '012_payhooks_sweep_indexes.sql')
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
      const indexes = async (name: string) =>
        (
          await admin.query('SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY 1', [
            schema,
            name,
          ])
        ).rows.map((row) => row.indexname.replace(name, '<table>'))
      expect(await indexes('payhooks_events')).toEqual(['<table>_expiry_idx', '<table>_pkey'])
      expect(await indexes('payhooks_events')).toEqual(await indexes('created_by_init'))

      await expect(postgresStore(newPool(), { table: `${schema}.missing`, createTable: false }).init()).rejects.toThrow(
        /does not exist/,
      )
    } finally {
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    }
  })

  it('sweeps rows past their expiry (done markers past retention, claims long expired), keeping the rest, in batches by the expiry index', async () => {
    const { store: table } = await tablesOfTest()
    const pool = newPool()
    const store = postgresStore(pool, { table, sweepIntervalMs: 0, sweepBatch: 1 })
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
    const swept = await sweptBy(admin, pool, () => store.sweep())
    expect([swept.deleted, swept.batches]).toEqual([2, 3]) // 1, 1, then none left
    expect(swept.plan).toContain(`"Index Name":"${table}_expiry_idx"`)
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
    await vi.waitFor(async () => expect((await admin.query(`SELECT 1 FROM ${table}`)).rowCount).toBe(0), {
      timeout: 10_000,
    })
    store.shutdown()
    await store.claim('evt_after_shutdown', 1)
    await admin.query(`UPDATE ${table} SET expires_at = clock_timestamp() - interval '1 second'`)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await admin.query(`SELECT 1 FROM ${table}`)).rowCount).toBe(1)
  })
})

describe('postgresStore without a reachable database', () => {
  it('answers 503 and runs no handler', async () => {
    const pool = newPool(10, {
      connectionString: undefined,
      host: '127.0.0.1',
      port: await freePort(),
      user: 'postgres',
      connectionTimeoutMillis: 500,
    })
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
