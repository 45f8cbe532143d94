// postgresDeadLetterStore on a real PostgreSQL: the shared dead-letter contract, and the table: its set-up (init, the
// shipped migrations), what is stored how, the list index. Kept counts and retention: postgres-dead-letter-counts;
// end to end with postgresStore: postgres-dead-letters-e2e.
import { type DeadLetter, memoryDeadLetterStore } from '@payhooks/core'
import { createDeadLetterTableSql, postgresDeadLetterStore } from '@payhooks/postgres'
import { deadLetterContract } from '@payhooks/testing/dead-letter-contract'
import { describe, expect, it, vi } from 'vitest'
import { runMigration } from '../fixtures/postgres.js'
import {
  admin,
  cleanUpAfterFile,
  countedByHand,
  filled,
  freshSchema,
  INDEXES,
  keptCounts,
  newPool,
  parked,
  shapeOf,
  tableName,
  triggersOf,
} from '../fixtures/postgres-dead-letters.js'

cleanUpAfterFile()

// The instances of a namespace share one table: separate store objects, as in separate processes.
const contractPool = newPool()
deadLetterContract('postgresDeadLetterStore', (namespace) => {
  const store = postgresDeadLetterStore(contractPool, { table: tableName('dl_contract', namespace) })
  // It counts its letters, so the contract's count tests run on it.
  if (typeof store.count !== 'function') throw new Error('expected postgresDeadLetterStore to have count()')
  return store
})

describe('postgresDeadLetterStore: table', () => {
  it('takes stale_event letters in a table made before that code: after the shipped 003, or once init() widened it', async () => {
    const schema = await freshSchema()
    await runMigration(admin, schema, '002_payhooks_dead_letters.sql')
    const migrated = postgresDeadLetterStore(newPool(), {
      table: `${schema}.payhooks_dead_letters`,
      createTable: false,
      sweepIntervalMs: 0,
    })
    await migrated.init()
    const stale = parked('evt_stale_resend', { code: 'stale_event' })
    await expect(migrated.park(stale)).rejects.toThrow(/check constraint/)
    await runMigration(admin, schema, '003_payhooks_dead_letters_stale_event.sql')
    await runMigration(admin, schema, '003_payhooks_dead_letters_stale_event.sql') // again: a no-op
    await migrated.park(stale)
    expect((await migrated.get('evt_stale_resend'))?.code).toBe('stale_event')

    const older = `${schema}.older_letters`
    await admin.query(createDeadLetterTableSql(older))
    const created = postgresDeadLetterStore(newPool(), { table: older, sweepIntervalMs: 0 })
    await created.init()
    await created.init()
    await created.park(stale)
    await expect(created.park(parked('evt_bad_code', { code: 'oops' as never }))).rejects.toThrow(/check constraint/)
    expect((await created.list({ code: 'stale_event' })).map((letter) => letter.eventId)).toEqual(['evt_stale_resend'])
  })

  it('works on the table the shipped migrations create, with createTable: false, and init() makes the same table', async () => {
    const schema = await freshSchema()
    await runMigration(admin, schema, '002_payhooks_dead_letters.sql')
    await runMigration(admin, schema, '003_payhooks_dead_letters_stale_event.sql')
    await runMigration(admin, schema, '008_payhooks_dead_letters_counts.sql')
    // 010 on a table holding letters already: they are counted as it adds the counts.
    const table = `${schema}.payhooks_dead_letters`
    await admin.query(`INSERT INTO ${table} (event_id, event_type, body, headers, code, reason, first_parked_at, parked_at, park_count, status)
      SELECT 'evt_before_' || i, 'transaction_settled', '\\x7b7d', '{}', 'handler_failed', 'r', now(), now(), 1, 'parked'
      FROM generate_series(1, 3) AS i`)
    await runMigration(admin, schema, '010_payhooks_dead_letters_kept_counts.sql')
    await runMigration(admin, schema, '010_payhooks_dead_letters_kept_counts.sql') // again: counted once
    await runMigration(admin, schema, '014_payhooks_dead_letters_created.sql')
    await runMigration(admin, schema, '015_payhooks_dead_letters_paused.sql')
    const migrated = postgresDeadLetterStore(newPool(), { table, createTable: false, sweepIntervalMs: 0 })
    await migrated.init()
    await migrated.park(parked('evt_migrated'))
    expect((await migrated.get('evt_migrated'))?.parkCount).toBe(1)
    expect(await keptCounts(table)).toEqual(await countedByHand(table))
    expect(await migrated.count({ code: 'handler_failed' })).toBe(3)
    expect(await migrated.count()).toBe(4)

    await postgresDeadLetterStore(newPool(), { table: `${schema}.created_by_init`, sweepIntervalMs: 0 }).init()
    const shape = await shapeOf(schema, 'payhooks_dead_letters')
    expect(shape).toEqual(await shapeOf(schema, 'created_by_init'))
    expect(await shapeOf(schema, 'payhooks_dead_letters_counts')).toEqual(
      await shapeOf(schema, 'created_by_init_counts'),
    )
    expect(await triggersOf(table)).toEqual(await triggersOf(`${schema}.created_by_init`))
    expect(await triggersOf(table)).toEqual(['payhooks_count_delete', 'payhooks_count_insert', 'payhooks_count_update'])
    expect(shape.columns).toHaveLength(12)
    expect(shape.columns[0]).toMatchObject({ column_name: 'event_id', collation_name: 'C' })
    expect(shape.indexes.map((index) => index.name).sort()).toEqual(INDEXES)

    await expect(
      postgresDeadLetterStore(newPool(), { table: `${schema}.missing`, createTable: false }).init(),
    ).rejects.toThrow(/does not exist/)
    // A table from an older or hand-written migration, missing a column, is refused at init, not at the first park.
    await admin.query(`CREATE TABLE ${schema}.incomplete (event_id text PRIMARY KEY, body bytea)`)
    await expect(
      postgresDeadLetterStore(newPool(), { table: `${schema}.incomplete`, createTable: false }).init(),
    ).rejects.toThrow(/column "event_type" does not exist/)
  })

  it("builds migration 008's indexes on an earlier release's table in the background: init() and parking never wait behind the build", async () => {
    const schema = await freshSchema()
    await runMigration(admin, schema, '002_payhooks_dead_letters.sql')
    await runMigration(admin, schema, '003_payhooks_dead_letters_stale_event.sql')
    const table = `${schema}.payhooks_dead_letters`
    // A write transaction left open (a long import, a slow handler's transaction): a plain CREATE INDEX waits for
    // it, and every park queues behind that wait.
    const writer = await admin.connect()
    const store = postgresDeadLetterStore(newPool(), { table, sweepIntervalMs: 0 })
    try {
      await writer.query('BEGIN')
      await writer.query(`INSERT INTO ${table} (event_id, event_type, body, headers, code, reason, first_parked_at, parked_at, park_count, status)
        VALUES ('evt_open', 'transaction_settled', '\\x7b7d', '{}', 'schema_mismatch', 'r', now(), now(), 1, 'parked')`)
      const within = <T>(promise: Promise<T>, what: string) =>
        Promise.race([
          promise,
          new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} waited 3 s`)), 3000)),
        ])
      await within(store.init(), 'init()')
      await within(store.park(parked('evt_during_build')), 'a park')
      expect(await store.count?.()).toBe(1)
      await writer.query('COMMIT')
      await expect
        .poll(async () => (await shapeOf(schema, 'payhooks_dead_letters')).indexes.map(({ name }) => name).sort(), {
          timeout: 15_000,
        })
        .toEqual(INDEXES)
      // Counted while the letters were counted: the triggers' counts and the fill's add up to the letters.
      await expect.poll(() => filled(table), { timeout: 15_000 }).toBe(true)
      expect(await keptCounts(table)).toEqual(await countedByHand(table))
      expect(await store.count()).toBe(2)
    } finally {
      await writer.query('ROLLBACK').catch(() => {})
      writer.release()
      store.shutdown?.()
    }
  })

  it('creates the table once when many instances start together', async () => {
    const table = tableName()
    const pool = newPool(8)
    const stores = Array.from({ length: 6 }, () => postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 }))
    await Promise.all(stores.map((store) => store.init()))
    await stores[0]?.park(parked('evt_once'))
    expect((await stores[5]?.get('evt_once'))?.eventId).toBe('evt_once')
  })

  it('keeps the body as bytea, byte for byte, and the headers as jsonb', async () => {
    const table = tableName()
    const store = postgresDeadLetterStore(newPool(), { table, sweepIntervalMs: 0 })
    await store.init()
    const body = new Uint8Array([...new TextEncoder().encode('{"amount":"10.30"}'), 0xff, 0x00, 0xc3])
    await store.park(parked('evt_bytes', { body }))
    const { rows } = await admin.query(
      `SELECT body = $1 AS same, octet_length(body) AS length, pg_typeof(body)::text AS body_type,
       pg_typeof(headers)::text AS headers_type, headers->>'content-type' AS content_type FROM ${table}`,
      [Buffer.from(body)],
    )
    expect(rows).toEqual([
      { same: true, length: body.length, body_type: 'bytea', headers_type: 'jsonb', content_type: 'application/json' },
    ])
  })

  it('parks one event from many instances at once as one letter, counting every parking', async () => {
    const table = tableName()
    const pool = newPool(8)
    const store = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
    await store.init()
    const others = Array.from({ length: 10 }, () => postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 }))
    await Promise.all(
      others.map((other, i) => other.park(parked('evt_raced', { parkedAt: new Date(Date.UTC(2026, 10, 4, 8, i)) }))),
    )
    const { rows } = await admin.query(`SELECT event_id, park_count FROM ${table}`)
    expect(rows).toEqual([{ event_id: 'evt_raced', park_count: 10 }])
  })

  it('keeps a reason holding a NUL character (which PostgreSQL text refuses), replaced', async () => {
    const table = tableName()
    const store = postgresDeadLetterStore(newPool(), { table, sweepIntervalMs: 0 })
    await store.init()
    await store.park(parked('evt_nul', { code: 'handler_failed', reason: 'ledger said a\u0000b' }))
    expect((await store.get('evt_nul'))?.reason).toBe('ledger said a\uFFFDb')
  })

  it('orders letters parked at the same time by event_id descending, in byte order, as memoryDeadLetterStore', async () => {
    const table = tableName()
    const store = postgresDeadLetterStore(newPool(), { table, sweepIntervalMs: 0 })
    await store.init()
    const memory = memoryDeadLetterStore()
    for (const id of ['evt_tie_B', 'evt_tie_a', 'evt_tie_c', 'evt_tie_Ä', 'evt_tie_10', 'evt_tie_9']) {
      await store.park(parked(id))
      memory.park(parked(id))
    }
    const ids = (letters: DeadLetter[]) => letters.map((letter) => letter.eventId)
    expect(ids(await store.list())).toEqual(ids(memory.list()))
    expect(ids(await store.list())).toEqual([
      'evt_tie_Ä',
      'evt_tie_c',
      'evt_tie_a',
      'evt_tie_B',
      'evt_tie_9',
      'evt_tie_10',
    ])
    expect(ids(await store.list({ limit: 2, offset: 2 }))).toEqual(['evt_tie_a', 'evt_tie_B'])
  })

  it('reads the list in index order, without sorting, for parked and replayed letters', async () => {
    const table = tableName()
    const pool = newPool()
    const store = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
    await store.init()
    for (let i = 0; i < 20; i++) {
      await store.park(parked(`evt_plan_${i}`, { parkedAt: new Date(Date.UTC(2026, 10, 4, 8, i)) }))
    }
    const sent = vi.spyOn(pool, 'query')
    const queries = [
      { limit: 5 },
      { status: 'replayed' as const, eventType: 'transaction_settled', code: 'schema_mismatch' as const },
      { parkedAfter: new Date(Date.UTC(2026, 10, 4, 8, 3)), parkedBefore: new Date(Date.UTC(2026, 10, 4, 8, 9)) },
    ]
    for (const query of queries) await store.list(query)
    const listed = sent.mock.calls.map(([text, values]) => ({ text: text as unknown as string, values }))
    sent.mockRestore()
    expect(listed).toHaveLength(queries.length)

    const client = await admin.connect()
    try {
      await client.query('BEGIN')
      // With scans and sorts priced out, the plan shows whether the index alone gives the order.
      await client.query('SET LOCAL enable_seqscan = off')
      await client.query('SET LOCAL enable_sort = off')
      for (const { text, values } of listed) {
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${text}`, values as unknown[])
        const plan = JSON.stringify(rows[0]['QUERY PLAN'])
        expect(plan).toMatch(new RegExp(`"Index Name":"${table}_(list|code|type)_idx"`))
        expect(plan).toContain('"Node Type":"Index Scan"')
        expect(plan).not.toMatch(/"Node Type":"[^"]*Sort"/) // Sort, Incremental Sort
      }
    } finally {
      await client.query('ROLLBACK')
      client.release()
    }
  })
})
