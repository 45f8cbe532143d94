// Ordering fences on postgresStore: the key's mark moves in the handlers' transaction, so only if their writes
// commit; a superseded event is skipped; the shipped migration 005 makes the fence table for createTable: false.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type Ordering, type WebhookError } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { runMigration } from '../fixtures/postgres.js'
import { postgresHarness } from '../fixtures/postgres-harness.js'

const secret = 'whsec_postgres_ordering'
const { admin, newPool, tablesOfTest } = postgresHarness()
const dropped: string[] = []
afterAll(async () => {
  for (const name of dropped) await admin.query(`DROP TABLE IF EXISTS ${name}`)
  await admin.query('SELECT 1')
})

const ordering = {
  transaction_settled: {
    key: (e: { data: { transaction_id: string } }) => e.data.transaction_id,
    at: (e: { data: { settlement_date: string } }) => e.data.settlement_date,
  },
  transaction_returned: {
    key: (e: { data: { transaction_id: string } }) => e.data.transaction_id,
    at: (e: { data: { settlement_date: string } }) => e.data.settlement_date,
  },
}

async function deliver(webhooks: { receive: (d: never) => Promise<{ status: number }> }, message: object) {
  const { body, headers } = await signedDelivery(JSON.stringify(message), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  return (await webhooks.receive({ method: 'POST', body, getHeader } as never)).status
}

const event = (type: string, transactionId: string, settlementDate: string) =>
  sampleEvent(type, { data: { transaction_id: transactionId, settlement_date: settlementDate } })

describe('postgresStore ordering fences', () => {
  it('moves the mark only when the handlers’ writes commit, and skips a superseded settlement', async () => {
    const { store: table, ledger } = await tablesOfTest('event_id text NOT NULL, amount numeric, status text')
    dropped.push(`${table}_fences`)
    const webhooks = createWebhooks({ secret, store: postgresStore(newPool(), { table }), ordering })
    const errors: WebhookError[] = []
    const seen: (Ordering | undefined)[] = []
    let fail = true
    const write = (status: string) => async (e: { event_id: string }, context: { db: import('pg').PoolClient }) => {
      await context.db.query(`INSERT INTO ${ledger} (event_id, status) VALUES ($1, $2)`, [e.event_id, status])
    }
    webhooks.onAny((_e, context) => void seen.push(context.ordering))
    webhooks.on('transaction_settled', write('settled'), { skipSuperseded: true })
    webhooks.on('transaction_returned', async (e, context) => {
      await write('returned')(e, context)
      if (fail) throw new Error('ledger check failed after the write')
    })
    webhooks.onError((error) => void errors.push(error))

    const returned = event('transaction_returned', 'txn_pg', '2026-11-05T08:00:00Z')
    expect(await deliver(webhooks, returned)).toBe(500)
    // The holder's event and since when are kept only while the key is held (issue 49: a smaller row after).
    const fence = async () =>
      (
        await admin.query(
          `SELECT holder, mark_id, held_since, holder_event_id, holder_event_type FROM ${table}_fences WHERE ordering_key = 'txn_pg'`,
        )
      ).rows[0]
    const free = { holder: null, held_since: null, holder_event_id: null, holder_event_type: null }
    // Rolled back: no status written, the mark unmoved, the key free.
    expect(await fence()).toEqual({ ...free, mark_id: null })
    expect((await admin.query(`SELECT * FROM ${ledger}`)).rows).toEqual([])

    fail = false
    expect(await deliver(webhooks, returned)).toBe(200)
    expect(await fence()).toEqual({ ...free, mark_id: returned.event_id })

    const settled = event('transaction_settled', 'txn_pg', '2026-11-03T08:00:00Z')
    expect(await deliver(webhooks, settled)).toBe(200)
    expect(seen.at(-1)).toMatchObject({ superseded: true, newest: { eventId: returned.event_id } })
    expect((await admin.query(`SELECT status FROM ${ledger}`)).rows).toEqual([{ status: 'returned' }])
    expect(await fence()).toEqual({ ...free, mark_id: returned.event_id })
    expect(errors.map((e) => e.code)).toEqual(['handler_failed'])
  })

  it('works on the tables of the shipped migrations (001, 004 to 007) with createTable: false', async () => {
    const schema = `ordering_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    dropped.push(`${schema}.payhooks_events_fences`, `${schema}.payhooks_events`)
    for (const file of [
      '001_payhooks_events.sql',
      '004_payhooks_events_body_digest.sql',
      '005_payhooks_events_fences.sql',
      '006_payhooks_events_fence_token.sql',
      '007_payhooks_events_held_keys.sql',
    ])
      await runMigration(admin, schema, file)
    const store = postgresStore(newPool(), { table: `${schema}.payhooks_events`, createTable: false })
    const webhooks = createWebhooks({ secret, store, ordering })
    const seen: (Ordering | undefined)[] = []
    webhooks.onAny((_e, context) => void seen.push(context.ordering))
    expect(await deliver(webhooks, event('transaction_settled', 'txn_m', '2026-11-03T08:00:00Z'))).toBe(200)
    expect(await deliver(webhooks, event('transaction_returned', 'txn_m', '2026-11-05T08:00:00Z'))).toBe(200)
    expect(seen.map((o) => o?.newest?.eventType)).toEqual([undefined, 'transaction_settled'])
    expect(seen[1]?.token).toBeGreaterThan(seen[0]?.token ?? Number.POSITIVE_INFINITY)
    await webhooks.close()
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  })

  it('asks for migration 006 on a fence table of 005 alone with createTable: false, and adds it itself otherwise', async () => {
    const schema = `ordering_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    for (const file of [
      '001_payhooks_events.sql',
      '004_payhooks_events_body_digest.sql',
      '005_payhooks_events_fences.sql',
    ])
      await runMigration(admin, schema, file)
    const table = `${schema}.payhooks_events`
    const refusing = createWebhooks({
      secret,
      store: postgresStore(newPool(), { table, createTable: false }),
      ordering,
    })
    const errors: WebhookError[] = []
    refusing.onError((error) => void errors.push(error))
    const settled = event('transaction_settled', 'txn_007', '2026-11-03T08:00:00Z')
    expect(await deliver(refusing, settled)).toBe(503)
    expect(String((errors[0]?.cause as Error | undefined)?.message)).toContain('006_payhooks_events_fence_token.sql')
    const adding = createWebhooks({ secret, store: postgresStore(newPool(), { table }), ordering })
    const tokens: number[] = []
    adding.onAny((_e, context) => void tokens.push(context.ordering?.token ?? 0))
    expect(await deliver(adding, settled)).toBe(200)
    expect(tokens[0]).toBeGreaterThan(0)
    // The receiver applies 007 in the background, its index built CONCURRENTLY: a DROP SCHEMA racing that build
    // deadlocked with it. The build's end awaited (007's index valid), the receivers closed, then dropped.
    const checker = postgresStore(newPool(1), { table, createTable: false })
    const applied = async () =>
      (await checker.health?.(AbortSignal.timeout(5000)))?.find((check) => check.name === 'postgres_migration_007')?.ok
    let built = await applied()
    for (let i = 0; i < 300 && !built; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50))
      built = await applied()
    }
    expect(built).toBe(true)
    await Promise.all([refusing.close(), adding.close()])
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  })
  it('keeps ordering working on a fence table without migration 007 (createTable: false), heldKeys naming it; lists once it is applied', async () => {
    const schema = `ordering_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    for (const file of [
      '001_payhooks_events.sql',
      '004_payhooks_events_body_digest.sql',
      '005_payhooks_events_fences.sql',
      '006_payhooks_events_fence_token.sql',
    ])
      await runMigration(admin, schema, file)
    const table = `${schema}.payhooks_events`
    const before = createWebhooks({ secret, store: postgresStore(newPool(), { table, createTable: false }), ordering })
    await expect(before.heldKeys()).rejects.toThrow('007_payhooks_events_held_keys.sql')
    expect(await deliver(before, event('transaction_settled', 'txn_h7', '2026-11-03T08:00:00Z'))).toBe(200)
    await runMigration(admin, schema, '007_payhooks_events_held_keys.sql')
    const after = createWebhooks({ secret, store: postgresStore(newPool(), { table, createTable: false }), ordering })
    let finish = () => {}
    after.on(
      'transaction_settled',
      () =>
        new Promise<void>((resolve) => {
          finish = resolve
        }),
    )
    const settled = event('transaction_settled', 'txn_h7', '2026-11-04T08:00:00Z')
    const answered = deliver(after, settled)
    await vi.waitFor(
      async () =>
        expect(await after.heldKeys()).toMatchObject([
          { key: 'txn_h7', eventId: settled.event_id, eventType: 'transaction_settled' },
        ]),
      { timeout: 10_000, interval: 10 },
    )
    finish()
    expect(await answered).toBe(200)
    expect(await after.heldKeys()).toEqual([])
    await Promise.all([before.close(), after.close()])
    await admin.query(`DROP SCHEMA ${schema} CASCADE`)
  })
})
