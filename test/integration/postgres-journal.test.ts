// postgresJournal on a real PostgreSQL: the shared journal contract (two receivers and a board-only process
// included), the shipped migration, the retention sweep in batches, and the plans its reads take.
import { createHash, randomUUID } from 'node:crypto'
import type { JournalRecord } from '@payhooks/core'
import { createJournalTableSql, postgresJournal } from '@payhooks/postgres'
import { journalContract } from '@payhooks/testing/journal-contract'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { databaseUrl, runMigration } from '../fixtures/postgres.js'

const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 })
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 })
const tables: string[] = []
const schemas: string[] = []

function tableName(seed: string = randomUUID()) {
  const table = `journal_${createHash('sha256').update(seed).digest('hex').slice(0, 16)}`
  if (!tables.includes(table)) tables.push(table)
  return table
}

afterAll(async () => {
  for (const table of tables) await admin.query(`DROP TABLE IF EXISTS ${table}`)
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await Promise.all([pool.end(), admin.end()])
})

// The instances of a namespace share one table: separate journal objects, as in separate processes.
journalContract('postgresJournal', (namespace) => postgresJournal(pool, { table: tableName(namespace) }))

let sequence = 0
const record = (at: number): JournalRecord => ({
  id: `sweep${(sequence++).toString(36).padStart(8, '0')}`,
  at,
  eventId: `evt_${sequence}`,
  eventType: 'transaction_settled',
  createdAt: null,
  status: 200,
  outcome: 'processed',
  instance: 'test',
  durationMs: 1,
  secretIndex: 0,
})

describe('postgresJournal', () => {
  it('runs on the table sql/009_payhooks_journal.sql makes, without creating it', async () => {
    const schema = `jmig_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    schemas.push(schema)
    const missing = postgresJournal(pool, { table: `${schema}.payhooks_journal`, createTable: false })
    await expect(missing.init?.()).rejects.toThrow(/does not exist/)
    await runMigration(admin, schema, '009_payhooks_journal.sql')
    const warnings: string[] = []
    const options = {
      table: `${schema}.payhooks_journal`,
      createTable: false,
      sweepIntervalMs: 0,
      logger: { warn: (line: string) => warnings.push(line), error() {} },
    }
    // 009 alone (an earlier release's table): written and read, a count of copies kept as one row, and said once.
    const journal = postgresJournal(pool, options)
    await journal.init?.()
    await journal.init?.()
    expect(warnings).toEqual([expect.stringContaining('has no column copies (migration 013')])
    const answer = record(Date.now())
    await journal.write([answer, { ...record(Date.now()), eventId: answer.eventId, copies: 5 }])
    expect((await journal.answers(answer.eventId))[0]).toEqual(answer)
    expect(await journal.answers(answer.eventId)).toHaveLength(2)
    await runMigration(admin, schema, '013_payhooks_journal_copies.sql')
    const migrated = postgresJournal(pool, options)
    await migrated.init?.()
    const counted = { ...record(Date.now()), copies: 7 }
    await migrated.write([counted, counted])
    expect(await migrated.answers(counted.eventId)).toEqual([counted])
    expect(warnings).toHaveLength(1)
  })

  it("adds the copies column (013) to an earlier release's table on first use", async () => {
    const table = tableName()
    await admin.query(createJournalTableSql(table).replace('  copies integer,\n', ''))
    const journal = postgresJournal(pool, { table, sweepIntervalMs: 0 })
    await journal.init?.()
    const counted = { ...record(Date.now()), copies: 3 }
    await journal.write([counted])
    expect(await journal.answers(counted.eventId)).toEqual([counted])
  })

  it('sweeps the rows past retention in batches, and keeps the others', async () => {
    const table = tableName()
    const journal = postgresJournal(pool, { table, sweepIntervalMs: 0, sweepBatch: 7 })
    await journal.init?.()
    const expired = Date.now() - journal.retentionMs - 60_000
    await journal.write(Array.from({ length: 30 }, (_, i) => record(expired - i)))
    await journal.write([record(Date.now())])
    expect(await journal.sweep()).toBe(30)
    const { rows } = await admin.query(`SELECT count(*)::integer AS n FROM ${table}`)
    expect(rows[0].n).toBe(1)
  })

  it("reads an event's timeline, a list of failures and the sweep through indexes", async () => {
    const table = tableName()
    const journal = postgresJournal(pool, { table, sweepIntervalMs: 0 })
    await journal.init?.()
    const client = await admin.connect()
    try {
      await client.query('SET enable_seqscan = off')
      const plan = async (text: string, values: unknown[]) =>
        JSON.stringify((await client.query(`EXPLAIN (FORMAT JSON) ${text}`, values)).rows)
      expect(await plan(`SELECT * FROM ${table} WHERE event_id = $1 AND at >= $2 ORDER BY at, id`, ['e', 0])).toContain(
        `${table}_event_idx`,
      )
      expect(
        await plan(
          `SELECT * FROM ${table} WHERE at >= $1 AND outcome = $2 AND outcome NOT IN ('processed', 'duplicate') ORDER BY at DESC, id DESC LIMIT 50`,
          [0, 'handler_failed'],
        ),
      ).toContain(`${table}_outcome_idx`)
      expect(await plan(`SELECT ctid FROM ${table} WHERE at < $1 ORDER BY at LIMIT 1000`, [0])).toContain(
        `${table}_pkey`,
      )
    } finally {
      client.release()
    }
  })
})
