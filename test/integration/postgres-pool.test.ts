// postgresStore and a pool shared with the handlers (issue 21, item 2): a client is held only by handlers that use
// context.db, from its first query; the receiver handles at most the pool's max - 1 events at once, so handlers
// calling pool.query themselves always find a client.
import { createWebhooks, type WebhookError } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import type { PoolClient } from 'pg'
import { describe, expect, it } from 'vitest'
import { deliverSettled, postgresHarness } from '../fixtures/postgres-harness.js'

const secret = 'whsec_postgres_pool_test'
const { newPool, tablesOfTest, rowsOf, admin } = postgresHarness()

describe('postgresStore on a pool shared with the handlers', () => {
  it('handles 12 simultaneous events whose handlers call pool.query, on a pool of 3, and the pool drains', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const pool = newPool(3)
    const store = postgresStore(pool, { table })
    const errors: WebhookError[] = []
    // One event type on both slots (the pool's max - 1): no bulkhead between types. The last of the 12 waits for a slot
    // through five runs before it: the deadline leaves them a loaded machine's seconds (the 5 s default, ~1 s each).
    const webhooks = createWebhooks({ secret, store, bulkheads: false, deadlineMs: 9000 }).onError((error) =>
      errors.push(error),
    )
    let running = 0
    let most = 0
    webhooks.on('transaction_settled', async (event) => {
      most = Math.max(most, ++running)
      await pool.query('SELECT pg_sleep(0.05)')
      await pool.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      running--
    })
    const ids = Array.from({ length: 12 }, (_, i) => `evt_shared_${i}`)
    const startedAt = performance.now()
    const answers = await Promise.all(ids.map((id) => deliverSettled(webhooks, id, secret)))
    const tookMs = Math.round(performance.now() - startedAt)
    const statuses = answers.map((answer) => `${answer.status} ${answer.body.status ?? answer.body.error}`)
    console.info(
      `12 events on a pool of 3: ${[...new Set(statuses)].join(', ')}; ${tookMs} ms; at most ${most} at once`,
    )
    expect(statuses).toEqual(ids.map(() => '200 processed'))
    expect(errors).toEqual([])
    expect(most).toBe(2)
    expect((await rowsOf(ledger)).sort()).toEqual([...ids].sort())
    const done = await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE token IS NULL`)
    expect(done.rows[0].n).toBe(12)
    expect(pool.waitingCount).toBe(0)
    expect(pool.totalCount - pool.idleCount).toBe(0)
    expect(store.maxConcurrentEvents).toBe(2) // the default: the pool's max - 1
  })

  it('holds no client while handlers run that never query context.db, even when they destructure it', async () => {
    const { store: table } = await tablesOfTest()
    const pool = newPool(4)
    // No start-up health checks: they query the pool soon after the receiver is made, which on a loaded machine is
    // while the event runs, and this counts the event's own clients.
    const webhooks = createWebhooks({ secret, store: postgresStore(pool, { table }), checkAtStart: false })
    const checkedOut: number[] = []
    webhooks.on('transaction_settled', async (_event, { db: _unused }) => {
      checkedOut.push(pool.totalCount - pool.idleCount)
    })
    webhooks.onAny(async () => {
      checkedOut.push(pool.totalCount - pool.idleCount)
    })
    expect((await deliverSettled(webhooks, 'evt_no_db', secret)).body.status).toBe('processed')
    expect(checkedOut).toEqual([0, 0])
    expect((await deliverSettled(webhooks, 'evt_no_db', secret)).body.status).toBe('duplicate')
  })

  it('gives context.db its client at the first query: queries keep their order, in every pg form', async () => {
    const { store: table, ledger } = await tablesOfTest()
    const pool = newPool(4)
    // As above: under two whole test runs side by side, a client was still out once this event was answered.
    const webhooks = createWebhooks({ secret, store: postgresStore(pool, { table }), checkAtStart: false })
    const seen: unknown[] = []
    let kept: PoolClient | undefined
    webhooks.on('transaction_settled', async (event, { db }) => {
      kept = db
      expect(() => db.on).toThrow(
        "context.db.on is there once db has sent a query: the store checks its client out of the pool at db's first query",
      )
      expect(db.escapeIdentifier('a"b')).toBe('"a""b"')
      // Sent before the client is there, not awaited: the SELECT after it still sees its row.
      void db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [event.event_id])
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${ledger}`)
      seen.push(rows[0]?.n)
      await new Promise<void>((resolve, reject) =>
        db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [`${event.event_id}:cb`], (error) =>
          error ? reject(error) : resolve(),
        ),
      )
      seen.push(typeof db.on)
      expect(() => db.release()).toThrow('context.db belongs to the store')
    })
    expect((await deliverSettled(webhooks, 'evt_forms', secret)).body.status).toBe('processed')
    expect(seen).toEqual([1, 'function'])
    expect(await rowsOf(ledger)).toEqual(['evt_forms', 'evt_forms:cb'])
    expect(pool.totalCount - pool.idleCount).toBe(0)
    // Its client went back to the pool: a handler keeping db cannot write through someone else's connection.
    await expect(kept?.query('SELECT 1')).rejects.toThrow(
      "context.db was used after the event's handlers returned: its transaction is over and its client released",
    )
  })
})
