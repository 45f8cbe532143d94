// postgresDeadLetterStore on a real PostgreSQL: its kept counts (migration 010) and the retention sweep.
import type { ParkedEvent } from '@payhooks/core'
import { createDeadLetterTableSql, postgresDeadLetterStore } from '@payhooks/postgres'
import { describe, expect, it, vi } from 'vitest'
import { sweptBy } from '../fixtures/postgres.js'
import {
  admin,
  cleanUpAfterFile,
  countedByHand,
  filled,
  freshSchema,
  keptCounts,
  newPool,
  parked,
  tableName,
} from '../fixtures/postgres-dead-letters.js'

cleanUpAfterFile()

describe('postgresDeadLetterStore: kept counts (migration 010)', () => {
  it('keeps the counts equal to the letters through parks, parks again, replays, deletes, sweeps and parks at once, and count() sums them', async () => {
    const table = tableName()
    const pool = newPool(12)
    const store = postgresDeadLetterStore(pool, {
      table,
      replayedRetentionMs: 60_000,
      sweepIntervalMs: 0,
      sweepBatch: 2,
    })
    await store.init()
    const exact = async () => expect(await keptCounts(table)).toEqual(await countedByHand(table))
    expect(await filled(table)).toBe(true) // made empty: filled at once
    const types = ['transaction_settled', 'transaction_returned', 'sale_created_from_batch']
    const codes = ['schema_mismatch', 'handler_failed', 'stale_event'] as const
    const letter = (i: number, overrides: Partial<ParkedEvent> = {}) =>
      parked(`evt_kept_${i}`, { eventType: types[i % 3], code: codes[i % 2], ...overrides })
    for (let i = 0; i < 12; i++) await store.park(letter(i))
    await exact()
    // Parked again: the same letter (park_count 2), or moved to another code and type.
    await store.park(letter(0))
    await store.park(letter(1, { code: 'stale_event', eventType: 'transaction_settled' }))
    await store.park(letter(2, { body: new TextEncoder().encode('{"other":1}') })) // other bytes: left as it is
    expect((await store.get('evt_kept_0'))?.parkCount).toBe(2)
    await exact()
    // Replayed (twice: counted once), deleted, swept in batches of 2.
    for (const i of [3, 4, 5, 6, 7]) await store.markReplayed(`evt_kept_${i}`, new Date(Date.now() - 120_000))
    await store.markReplayed('evt_kept_3', new Date(Date.now() - 120_000))
    await store.markReplayed('evt_kept_8', new Date())
    await store.park(letter(8)) // replayed: stays so
    expect(await store.delete('evt_kept_9')).toBe(true)
    await exact()
    expect(await store.sweep()).toBe(5)
    await exact()
    // Many parks at once, on 12 connections, some of the same event.
    const stores = Array.from({ length: 4 }, () => postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 }))
    await Promise.all(
      Array.from({ length: 120 }, (_, i) => (stores[i % 4] as typeof store).park(letter(100 + (i % 90)))),
    )
    await exact()
    const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE status = 'parked'`)
    expect(await store.count()).toBe(rows[0].n)
    expect(await store.count({ status: 'all' })).toBe(rows[0].n + 1)
    expect(await store.count({ status: 'replayed', code: 'schema_mismatch' })).toBe(1)
    expect(await store.count({ eventType: 'transaction_returned', code: 'handler_failed' })).toBe(
      (await store.list({ eventType: 'transaction_returned', code: 'handler_failed', limit: 1000 })).length,
    )
    // count() answers from the kept counts, not by reading the letters.
    await admin.query(
      `UPDATE ${table}_counts SET n = n + 1000 WHERE ctid = (SELECT ctid FROM ${table}_counts WHERE status = 'parked' LIMIT 1)`,
    )
    expect(await store.count()).toBe(rows[0].n + 1000)
  })

  it('counts letters parked before a time (a replay-all run fixed at its start) from the kept counts, less those parked since', async () => {
    const table = tableName()
    const store = postgresDeadLetterStore(newPool(4), { table, sweepIntervalMs: 0 })
    await store.init()
    const codes = ['schema_mismatch', 'handler_failed'] as const
    const at = (i: number) => new Date(Date.UTC(2026, 10, 4, 8, i))
    for (let i = 0; i < 30; i++) {
      await store.park(parked(`evt_bound_${i}`, { code: codes[i % 2], parkedAt: at(i) }))
    }
    for (const i of [2, 5, 20, 21]) await store.markReplayed(`evt_bound_${i}`, new Date())
    const truth = async (where: string, values: unknown[]) =>
      (await admin.query(`SELECT count(*)::int AS n FROM ${table} WHERE ${where}`, values)).rows[0].n as number
    for (const bound of [at(0), at(10), at(21), at(29), at(30), at(90)]) {
      expect(await store.count({ parkedBefore: bound })).toBe(
        await truth("status = 'parked' AND parked_at < $1", [bound]),
      )
      expect(await store.count({ code: 'handler_failed', parkedBefore: bound })).toBe(
        await truth("status = 'parked' AND code = 'handler_failed' AND parked_at < $1", [bound]),
      )
      expect(await store.count({ status: 'replayed', parkedBefore: bound })).toBe(
        await truth("status = 'replayed' AND parked_at < $1", [bound]),
      )
      expect(await store.count({ status: 'all', parkedBefore: bound })).toBe(await truth('parked_at < $1', [bound]))
    }
    // Read from the kept counts (the letters since the bound counted by hand), not by reading every letter below it.
    await admin.query(
      `UPDATE ${table}_counts SET n = n + 1000 WHERE ctid = (SELECT ctid FROM ${table}_counts WHERE status = 'parked' AND code = 'handler_failed' LIMIT 1)`,
    )
    expect(await store.count({ code: 'handler_failed', parkedBefore: at(21) })).toBe(
      1000 + (await truth("status = 'parked' AND code = 'handler_failed' AND parked_at < $1", [at(21)])),
    )
  })

  it("fills an earlier release's counts exactly while letters are parked, replayed and deleted, counting the letters until then", async () => {
    const schema = await freshSchema()
    const table = `${schema}.letters`
    await admin.query(createDeadLetterTableSql(table))
    await admin.query(`INSERT INTO ${table} (event_id, event_type, body, headers, code, reason, first_parked_at, parked_at, park_count, status, replayed_at)
      SELECT 'evt_old_' || i, CASE WHEN i % 3 = 0 THEN 'transaction_returned' ELSE 'transaction_settled' END, '\\x7b7d', '{}',
        CASE WHEN i % 2 = 0 THEN 'schema_mismatch' ELSE 'handler_failed' END, 'r', now(), now(), 1,
        CASE WHEN i % 5 = 0 THEN 'replayed' ELSE 'parked' END, CASE WHEN i % 5 = 0 THEN now() END
      FROM generate_series(1, 20000) AS i`)
    const pool = newPool(10)
    const writers = Array.from({ length: 6 }, () =>
      postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0, createTable: false }),
    )
    let writing = true
    const wrote = writers.map(async (writer, w) => {
      for (let i = w; writing; i += writers.length) {
        await writer.park(parked(`evt_new_${i}`, { code: i % 2 ? 'handler_failed' : 'schema_mismatch' }))
        if (i % 3 === 0) await writer.markReplayed(`evt_old_${i + 1}`, new Date())
        if (i % 4 === 0) await writer.delete(`evt_old_${i + 2}`)
      }
    })
    const store = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
    try {
      await store.init()
      expect(await store.count({ status: 'all' })).toBeGreaterThanOrEqual(20000) // the letters counted meanwhile
      await expect.poll(() => filled(table), { timeout: 15_000 }).toBe(true)
      await new Promise((resolve) => setTimeout(resolve, 100))
    } finally {
      writing = false
      await Promise.all(wrote)
      store.shutdown()
    }
    expect(await keptCounts(table)).toEqual(await countedByHand(table))
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM ${table} WHERE code = 'handler_failed' AND status = 'parked'`,
    )
    expect(await store.count({ code: 'handler_failed' })).toBe(rows[0].n)
  })
})

describe('postgresDeadLetterStore: retention', () => {
  it('sweeps replayed letters past replayedRetentionMs, keeping parked ones however old, and recent replays', async () => {
    const table = tableName()
    const pool = newPool()
    const store = postgresDeadLetterStore(pool, {
      table,
      replayedRetentionMs: 60_000,
      sweepIntervalMs: 0,
      sweepBatch: 1,
    })
    await store.init()
    const longAgo = new Date(Date.now() - 30 * 24 * 60 * 60 * 1000)
    await store.park(parked('evt_parked_long_ago', { parkedAt: longAgo }))
    await store.park(parked('evt_replayed_long_ago'))
    await store.park(parked('evt_replayed_now'))
    await store.park(parked('evt_parked_again'))
    expect(await store.markReplayed('evt_replayed_long_ago', new Date(Date.now() - 120_000))).toBe(true)
    expect(await store.markReplayed('evt_replayed_now', new Date())).toBe(true)
    expect(await store.markReplayed('evt_parked_again', new Date(Date.now() - 120_000))).toBe(true)
    // Parking a replayed letter again leaves it replayed (the event was handled), so it is swept as one.
    await store.park(parked('evt_parked_again', { parkedAt: new Date() }))

    // In batches of one, each its own statement, by the sweep index.
    const swept = await sweptBy(admin, pool, () => store.sweep())
    expect([swept.deleted, swept.batches]).toEqual([2, 3])
    expect(swept.plan).toContain(`"Index Name":"${table}_sweep_idx"`)
    expect(await store.get('evt_replayed_long_ago')).toBeUndefined()
    expect(await store.get('evt_parked_again')).toBeUndefined()
    const left = (await store.list({ status: 'all' })).map((letter) => [letter.eventId, letter.status]).sort()
    expect(left).toEqual([
      ['evt_parked_long_ago', 'parked'],
      ['evt_replayed_now', 'replayed'],
    ])
    expect(await store.sweep()).toBe(0)
  })

  it('sweeps in the background every sweepIntervalMs once initialised, until shutdown, which leaves the pool open', async () => {
    const table = tableName()
    const pool = newPool()
    const store = postgresDeadLetterStore(pool, { table, replayedRetentionMs: 1, sweepIntervalMs: 50 })
    await store.init()
    await store.park(parked('evt_swept'))
    await store.markReplayed('evt_swept', new Date(Date.now() - 1000))
    await vi.waitFor(async () => expect((await admin.query(`SELECT 1 FROM ${table}`)).rowCount).toBe(0), {
      timeout: 10_000,
    })
    store.shutdown()
    await store.park(parked('evt_after_shutdown'))
    await store.markReplayed('evt_after_shutdown', new Date(Date.now() - 1000))
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((await admin.query(`SELECT event_id FROM ${table}`)).rows).toEqual([{ event_id: 'evt_after_shutdown' }])
    expect((await pool.query('SELECT 1 AS open')).rows).toEqual([{ open: 1 }])
  })

  it('logs a failed background sweep as one line and keeps sweeping', async () => {
    const table = tableName()
    const lines: string[] = []
    const store = postgresDeadLetterStore(newPool(), {
      table,
      sweepIntervalMs: 50,
      logger: { warn: (line) => lines.push(line), error: (line) => lines.push(`error: ${line}`) },
    })
    await store.init()
    await admin.query(`ALTER TABLE ${table} RENAME TO ${table}_away`)
    try {
      await vi.waitFor(() => expect(lines.length).toBeGreaterThan(0), { timeout: 10_000 })
    } finally {
      await admin.query(`ALTER TABLE ${table}_away RENAME TO ${table}`)
      store.shutdown()
    }
    expect(lines[0]).toBe(
      `[payhooks] postgresDeadLetterStore: sweep of ${table} failed: relation "${table}" does not exist`,
    )
  })
})
