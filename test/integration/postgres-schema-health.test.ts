// The schema as health() and migrate() read it (issue 51): a mixed-case table name passed the name check, but the
// catalog look-ups folded it, so migrate() applied its migrations again on every run and readiness said 503
// postgres_migration_001 while deliveries were processed; and health() checked none of the indexes the code relies on
// (with 012's index dropped every check said ok while each sweep batch read the whole table).
import { randomUUID } from 'node:crypto'
import { createWebhooks, type HealthReport } from '@payhooks/core'
import { migrate, postgresDeadLetterStore, postgresJournal, postgresStore } from '@payhooks/postgres'
import { expect, it } from 'vitest'
import { postgresHarness } from '../fixtures/postgres-harness.js'

const { admin, newPool } = postgresHarness()
const secret = 'whsec_postgres_schema_health'
const silent = { warn() {}, error() {} }
const fresh = { maxAgeMs: 0 }

/** Tables of one test, in `case`d names, dropped with what migrate() makes beside them. */
function tablesNamed(prefix: (name: string) => string) {
  const id = randomUUID().replaceAll('-', '').slice(0, 10)
  const table = prefix(`events_${id}`)
  const letters = prefix(`letters_${id}`)
  const journal = prefix(`journal_${id}`)
  return {
    options: { table, deadLetterTable: letters, journalTable: journal },
    drop: async () => {
      const q = (name: string) => `"${name}"`
      await admin.query(
        `DROP TABLE IF EXISTS ${[table, `${table}_fences`, letters, `${letters}_counts`, journal].map(q).join(', ')}`,
      )
      await admin.query(`DROP FUNCTION IF EXISTS ${q(`${letters}_count_fn`)}`)
    },
  }
}

const migrationChecks = (report: HealthReport) =>
  report.checks.filter((check) => check.name.includes('_migration_')).map((c) => `${c.name}:${c.ok ? 'ok' : 'no'}`)

it('a mixed-case table name: migrate() applies each migration once, and health() finds them all', async () => {
  const { options, drop } = tablesNamed((name) => `Pay${name.slice(0, 1).toUpperCase()}${name.slice(1)}`)
  expect(options.table).toMatch(/^PayEvents_/)
  const pool = newPool(4)
  try {
    const first = await migrate(pool, { ...options, logger: silent })
    expect(first.applied).toEqual(['001', '004', '005', '006', '007', '012', '002', '015', '008', '010', '014', '009'])
    expect((await migrate(pool, { ...options, logger: silent })).applied).toEqual([])
    const webhooks = createWebhooks({
      secret,
      store: postgresStore(pool, { table: options.table, createTable: false, sweepIntervalMs: 0 }),
      deadLetters: postgresDeadLetterStore(pool, {
        table: options.deadLetterTable,
        createTable: false,
        sweepIntervalMs: 0,
      }),
      journal: postgresJournal(pool, { table: options.journalTable, createTable: false, sweepIntervalMs: 0 }),
      checkAtStart: false,
    })
    const report = await webhooks.health(fresh)
    expect(report.checks.filter((check) => !check.ok)).toEqual([])
    expect(report.ready).toBe(true)
    expect(migrationChecks(report)).toEqual([
      'postgres_migration_001:ok',
      'postgres_migration_004:ok',
      'postgres_migration_005:ok',
      'postgres_migration_006:ok',
      'postgres_migration_007:ok',
      'postgres_migration_012:ok',
      'dead_letter_postgres_migration_002:ok',
      'dead_letter_postgres_migration_003:ok',
      'dead_letter_postgres_migration_008:ok',
      'dead_letter_postgres_migration_010:ok',
      'dead_letter_postgres_migration_014:ok',
      'dead_letter_postgres_migration_015:ok',
      'journal_postgres_migration_009:ok',
      'journal_postgres_migration_013:ok',
    ])
    await webhooks.close()
  } finally {
    await drop()
  }
})

it('health() warns, naming the index, when an index of 012, 008 or 009 is missing', async () => {
  const { options, drop } = tablesNamed((name) => name)
  const pool = newPool(4)
  try {
    await migrate(pool, { ...options, logger: silent })
    const webhooks = createWebhooks({
      secret,
      store: postgresStore(pool, { table: options.table, createTable: false, sweepIntervalMs: 0 }),
      deadLetters: postgresDeadLetterStore(pool, {
        table: options.deadLetterTable,
        createTable: false,
        sweepIntervalMs: 0,
      }),
      journal: postgresJournal(pool, { table: options.journalTable, createTable: false, sweepIntervalMs: 0 }),
      checkAtStart: false,
    })
    expect((await webhooks.health(fresh)).checks.filter((check) => !check.ok)).toEqual([])
    await admin.query(`DROP INDEX ${options.table}_expiry_idx`)
    await admin.query(`DROP INDEX ${options.deadLetterTable}_type_idx`)
    await admin.query(`DROP INDEX ${options.journalTable}_outcome_idx`)
    const report = await webhooks.health(fresh)
    // Warnings: the receiver stays ready, and says what is slow and how to fix it.
    expect(report.ready).toBe(true)
    const failed = report.checks.filter((check) => !check.ok)
    expect(failed.map((check) => [check.name, check.severity])).toEqual([
      ['postgres_migration_012', 'warning'],
      ['dead_letter_postgres_migration_008', 'warning'],
      ['journal_postgres_migration_009', 'warning'],
    ])
    expect(failed[0]).toMatchObject({
      detail: `index ${options.table}_expiry_idx on ${options.table} is missing: each batch of the hourly sweep reads the whole table (and the fences)`,
      fix: `apply sql/012_payhooks_sweep_indexes.sql of @payhooks/postgres (for table ${options.table}), or run payhooks migrate --postgres URL (it builds indexes CONCURRENTLY)`,
    })
    expect(failed[1]?.detail).toMatch(new RegExp(`^index ${options.deadLetterTable}_type_idx on `))
    expect(failed[2]?.detail).toMatch(new RegExp(`^index ${options.journalTable}_outcome_idx on `))
    // migrate() builds them again, and every check is ok.
    expect((await migrate(pool, { ...options, logger: silent })).applied).toEqual(['012', '008', '009'])
    expect((await webhooks.health(fresh)).checks.filter((check) => !check.ok)).toEqual([])
    await webhooks.close()
  } finally {
    await drop()
  }
})
