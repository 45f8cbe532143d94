// postgresDeadLetterStore on a real PostgreSQL: the shared dead-letter contract, the table's set-up (init, the
// shipped migration), what is stored how, the list index, the retention sweep, a database that cannot be reached,
// and end to end with postgresStore: parked with a 2XX, replayed once the schema is fixed, written through
// context.db exactly once.
import { createHash, randomUUID } from 'node:crypto'
import {
  createWebhooks,
  type DeadLetter,
  memoryDeadLetterStore,
  type ParkedEvent,
  SchemaError,
  SIGNATURE_HEADER,
  StoreError,
  transactionSettledSchema,
  type WebhookError,
} from '@payhooks/core'
import { createDeadLetterTableSql, postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { deadLetterContract } from '@payhooks/testing/dead-letter-contract'
import pg from 'pg'
import * as v from 'valibot'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { freePort } from '../fixtures/own-redis.js'
import { databaseUrl, runMigration, sweptBy } from '../fixtures/postgres.js'

const DATABASE_URL = databaseUrl()
const secret = 'whsec_postgres_dead_letters'
const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 2 })
const pools: pg.Pool[] = []
const tables: string[] = []
const schemas: string[] = []

function newPool(max = 4) {
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max })
  pools.push(pool)
  return pool
}

/** A fresh table name of this test (dropped after the file). */
function tableName(prefix = 'dl', seed: string = randomUUID()) {
  const table = `${prefix}_${createHash('sha256').update(seed).digest('hex').slice(0, 16)}`
  if (!tables.includes(table)) tables.push(table)
  return table
}

async function freshSchema() {
  const schema = `dlmig_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  await admin.query(`CREATE SCHEMA ${schema}`)
  schemas.push(schema)
  return schema
}

afterAll(async () => {
  for (const table of tables) await admin.query(`DROP TABLE IF EXISTS ${table}`)
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await Promise.all([...pools, admin].map((pool) => pool.end()))
})

// The instances of a namespace share one table: separate store objects, as in separate processes.
const contractPool = newPool()
deadLetterContract('postgresDeadLetterStore', (namespace) => {
  const store = postgresDeadLetterStore(contractPool, { table: tableName('dl_contract', namespace) })
  // It counts its letters, so the contract's count tests run on it.
  if (typeof store.count !== 'function') throw new Error('expected postgresDeadLetterStore to have count()')
  return store
})

function parked(id: string, overrides: Partial<ParkedEvent> = {}): ParkedEvent {
  return {
    eventId: id,
    eventType: 'transaction_settled',
    body: new TextEncoder().encode(`{"event_id":"${id}"}`),
    headers: { [SIGNATURE_HEADER]: 'A'.repeat(64), 'content-type': 'application/json' },
    code: 'schema_mismatch',
    reason: `transaction_settled ${id} does not match its schema`,
    createdAt: new Date('2026-11-03T08:00:00.000Z'),
    parkedAt: new Date('2026-11-04T08:00:00.000Z'),
    ...overrides,
  }
}

/** Columns (name, type, nullability, collation), check constraints and index definitions of `schema.table`. */
async function shapeOf(schema: string, table: string) {
  const columns = await admin.query(
    `SELECT column_name, data_type, is_nullable, collation_name FROM information_schema.columns
     WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`,
    [schema, table],
  )
  const checks = await admin.query(
    `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
     JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 AND t.relname = $2 ORDER BY 1`,
    [schema, table],
  )
  const indexes = await admin.query(
    'SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 ORDER BY indexname',
    [schema, table],
  )
  const rename = (text: string) => text.replaceAll(table, '<table>')
  return {
    columns: columns.rows,
    checks: checks.rows.map((row) => row.def),
    indexes: indexes.rows.map((row) => ({ name: rename(row.indexname), def: rename(row.indexdef) })),
  }
}

const INDEXES = ['<table>_code_idx', '<table>_list_idx', '<table>_pkey', '<table>_sweep_idx', '<table>_type_idx']

/** The triggers on `table` (schema-qualified or not). */
async function triggersOf(table: string) {
  const { rows } = await admin.query(
    'SELECT tgname FROM pg_trigger WHERE tgrelid = to_regclass($1) AND NOT tgisinternal ORDER BY 1',
    [table],
  )
  return rows.map((row) => row.tgname as string)
}

/** The letters of `table` counted by hand, by status, code and event type. */
async function countedByHand(table: string) {
  const { rows } = await admin.query(
    `SELECT status, code, event_type, count(*)::int AS n FROM ${table} GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
  )
  return rows
}

/** What `<table>_counts` holds, by status, code and event type (shards summed, zeros left out, marker apart). */
async function keptCounts(table: string) {
  const { rows } = await admin.query(
    `SELECT status, code, event_type, sum(n)::int AS n FROM ${table}_counts WHERE status <> ''
     GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
  )
  return rows
}

/** Whether `<table>_counts` has its marker: count() sums it. */
async function filled(table: string) {
  return (await admin.query(`SELECT 1 FROM ${table}_counts WHERE status = ''`)).rowCount === 1
}

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
    expect(await fixed.replay('evt_e2e')).toEqual({ eventId: 'evt_e2e', status: 'duplicate' })
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
