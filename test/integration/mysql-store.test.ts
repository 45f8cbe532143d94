// mysqlStore on the real MariaDB (MYSQL_URL): the transaction contract of @payhooks/testing (a write through
// context.db commits with the done marker, rolls back with a failure or a lost claim, and receiver processes killed
// with SIGKILL end with exactly one row per event), and what the store refuses at creation.
import { join } from 'node:path'
import { createWebhooks } from '@payhooks/core'
import { migrate, mysqlStore } from '@payhooks/mysql'
import { transactionContract } from '@payhooks/testing/transaction-contract'
import mysqlCallbacks from 'mysql2'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../fixtures/cli-run.js'
import { mysqlUrl } from '../fixtures/mysql.js'

const admin = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 2 })
const file = join(import.meta.dirname, '../fixtures/bindings/mysql.mjs')
const binding = await import(file)
afterAll(async () => {
  await binding.close()
  await admin.end()
})

transactionContract('mysqlStore', binding.makeStore, {
  write: binding.write,
  fail: binding.fail,
  savepoint: binding.savepoint,
  ledgerSql: binding.ledgerSql,
  sql: async (text, values) => (await admin.query(text, values))[0] as Record<string, unknown>[],
  receiver: file,
  // Half the default events: the six kills are what the test is about, and the MariaDB tests stay quick.
  crash: { events: 30 },
})

describe('mysqlStore refuses at creation what it cannot use, naming what it got and what it needs', () => {
  const url = mysqlUrl()
  it('a pg Pool', async () => {
    const pool = new pg.Pool({ connectionString: 'postgres://127.0.0.1:1/none' })
    expect(() => mysqlStore(pool as never)).toThrow(
      /mysqlStore: needs a mysql2\/promise Pool .*; got a pg Pool \(node-postgres\): for PostgreSQL, use postgresStore/,
    )
    await pool.end()
  })

  it('a callback-style mysql2 pool, and a single connection', async () => {
    const pool = mysqlCallbacks.createPool({ uri: url })
    expect(() => mysqlStore(pool as never)).toThrow(/got a callback-style mysql2 Pool .*pass pool\.promise\(\)/)
    // What .promise() gives is accepted.
    expect(mysqlStore(pool.promise()).ordering).toBe(true)
    await pool.promise().end()
    const connection = await mysql.createConnection({ uri: url })
    expect(() => mysqlStore(connection as never)).toThrow(/got a single connection .*it needs a pool/)
    await connection.end()
    expect(() => mysqlStore(undefined as never)).toThrow(/needs a mysql2\/promise Pool .*; got undefined/)
  })

  it('a closed pool: at creation, at init and in the health checks, never at the first event', async () => {
    const pool = mysql.createPool({ uri: url, connectionLimit: 2 })
    const store = mysqlStore(pool)
    await pool.end()
    expect(() => mysqlStore(pool)).toThrow(
      /mysqlStore: got a closed mysql2 Pool \(pool.end\(\) was called\); it needs a live one/,
    )
    await expect(store.init()).rejects.toThrow(/closed mysql2 Pool/)
    const webhooks = createWebhooks({ secret: 'whsec_closed', store, checkAtStart: false })
    const health = await webhooks.health()
    expect(health.checks).toContainEqual(
      expect.objectContaining({ name: 'mysql', ok: false, fix: 'give the store a live pool' }),
    )
  })
})

describe('migrate and the health checks', () => {
  it('makes the tables online (a no-op run again); createTable: false then finds them, and says what is missing', async () => {
    const table = `migrated_${Date.now().toString(36)}`
    const missing = mysqlStore(admin, { table, createTable: false, sweepIntervalMs: 0 })
    const before = await missing.health()
    expect(before).toContainEqual(
      expect.objectContaining({
        name: 'mysql_migration_001',
        ok: false,
        fix: expect.stringContaining('payhooks migrate --mysql URL'),
      }),
    )
    await expect(missing.init()).rejects.toThrow(/doesn't exist/)
    const lines: string[] = []
    const journalTable = `${table}_journal`
    const deadLetterTable = `${table}_letters`
    const options = { table, journalTable, deadLetterTable }
    expect(await migrate(admin, { ...options, log: (line) => lines.push(line) })).toEqual({
      applied: [
        '001_payhooks_events.sql',
        '002_payhooks_events_fences.sql',
        '003_payhooks_dead_letters.sql',
        '004_payhooks_journal.sql',
      ],
    })
    expect((await migrate(admin, options)).applied).toEqual([])
    expect(lines).toEqual([])
    await missing.init()
    const after = await missing.health()
    expect(after.every((check) => check.ok)).toBe(true)
    expect(after.map((check) => check.name)).toEqual(['mysql', 'mysql_migration_001', 'mysql_migration_002'])
    expect(await missing.claim('evt_migrated', 1000)).toMatchObject({ status: 'claimed' })
    await admin.query(`DROP TABLE \`${table}\`, \`${table}_fences\`, \`${journalTable}\`, \`${deadLetterTable}\``)
  })

  it('`payhooks migrate --mysql URL` applies what is missing and says so; run again, nothing', async () => {
    const table = `cli_${Date.now().toString(36)}`
    try {
      const result = await runCli([
        'migrate',
        '--mysql',
        mysqlUrl(),
        '--table',
        table,
        '--no-journal',
        '--no-dead-letters',
        '--json',
      ])
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
      expect(JSON.parse(result.stdout)).toEqual({
        applied: ['001_payhooks_events.sql', '002_payhooks_events_fences.sql'],
      })
      const again = await runCli([
        'migrate',
        '--mysql',
        mysqlUrl(),
        '--table',
        table,
        '--no-journal',
        '--no-dead-letters',
      ])
      expect(again.stdout).toBe('Nothing to apply: every migration is there.\n')
    } finally {
      await admin.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_fences\``)
    }
  })
})
