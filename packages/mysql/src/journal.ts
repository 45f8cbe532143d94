import type { HealthCheck } from '@payhooks/core'
import { type Journal, type JournalRecord, journalRetention } from '@payhooks/core'
import { nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'mysql2/promise'
import { createJournalTableSql, JOURNAL_COLUMNS, journalStatements } from './journal-sql.js'
import { startSweeper } from './maintenance.js'
import { checkOpen, checkPool } from './pool-checks.js'
import { runOn } from './run.js'
import { columnsOf, runDdl } from './schema.js'
import { checkTable } from './sql.js'
import type { MysqlJournalOptions } from './types.js'

type Row = Record<string, unknown>

const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))

function toRecord(row: Row): JournalRecord {
  const record = {
    id: text(row.id),
    at: Number(row.at),
    eventId: text(row.event_id),
    eventType: text(row.event_type),
    createdAt: row.created_at === null ? null : text(row.created_at),
    status: Number(row.status),
    outcome: text(row.outcome),
    instance: text(row.instance),
    durationMs: Number(row.duration_ms),
    secretIndex: Number(row.secret_index),
  }
  const labeled = row.secret_label === null ? record : { ...record, secretLabel: text(row.secret_label) }
  return row.copies === null ? labeled : { ...labeled, copies: Number(row.copies) }
}

/**
 * The answers of a receiver fleet in a MySQL (or MariaDB) table, for `createWebhooks({ journal })`:
 * `webhooks.events.get`, `list` and `counts` from any instance. Each batch of answers is one multi-row `INSERT`,
 * written off the hot path; a batch written again (after a lost reply) keeps each row once. Rows past `retentionMs`
 * are never returned, and each instance deletes them every `sweepIntervalMs` in batches of `sweepBatch`, oldest first
 * by the primary key. The table is created by `init()` unless `createTable` is false (then `migrate(pool)`,
 * `payhooks migrate --mysql URL` or `sql/004_payhooks_journal.sql`).
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { mysqlJournal, mysqlStore } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL })
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   store: mysqlStore(pool),
 *   journal: mysqlJournal(pool),
 * })
 */
export function mysqlJournal(pool: Pool, options: MysqlJournalOptions = {}): Journal & { sweep(): Promise<number> } {
  const where = 'mysqlJournal'
  checkPool(pool, where)
  const table = checkTable(options.table ?? 'payhooks_journal', where)
  const createTable = options.createTable ?? true
  const retentionMs = journalRetention(options.retentionMs, where)
  const sweepIntervalMs = nonNegativeNumber(options.sweepIntervalMs ?? 600_000, where, 'sweepIntervalMs')
  const sweepBatch = positiveInteger(options.sweepBatch ?? 1000, where, 'sweepBatch')
  const logger = options.logger ?? console
  const sql = journalStatements(table)
  const run = runOn(pool)
  let sweeper: { stop(): void } | undefined

  /** Deletes every row past retention, a batch per statement; resolves how many. */
  async function sweep(): Promise<number> {
    const before = Date.now() - retentionMs
    let total = 0
    for (;;) {
      const deleted = ((await run(sql.sweep, [before, sweepBatch])) as { affectedRows: number }).affectedRows
      total += deleted
      if (deleted < sweepBatch) return total
    }
  }

  return {
    retentionMs,
    async init() {
      checkOpen(pool, where)
      if (createTable) await runDdl(pool, [createJournalTableSql(table)], 1000)
      else await run(sql.probe)
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `${where}: sweep of ${table}`)
      }
    },
    async write(records) {
      if (records.length === 0) return
      const rows = records.map((r) => [
        r.at,
        r.id,
        r.eventId,
        r.eventType,
        r.createdAt,
        r.status,
        r.outcome,
        r.instance,
        Math.min(Math.round(r.durationMs), 2_147_483_647),
        r.secretIndex,
        r.secretLabel ?? null,
        r.copies ?? null,
      ])
      await run(sql.insert, [rows])
    },
    async answers(eventId) {
      return ((await run(sql.answers, [eventId, Date.now() - retentionMs])) as Row[]).map(toRecord)
    },
    async list(query) {
      const { text: statement, values } = sql.list(query, Date.now() - retentionMs)
      return ((await run(statement, values)) as Row[]).map(toRecord)
    },
    async counts(from, to) {
      const oldest = Date.now() - retentionMs
      return ((await run(sql.counts, [from, to])) as Row[])
        .map((row) => ({ minute: Number(row.minute), outcome: text(row.outcome), count: Number(row.count) }))
        .filter((row) => row.minute + 60_000 > oldest)
    },
    sweep,
    // Its table and columns, as warnings: the journal is off the delivery path.
    async health(): Promise<HealthCheck[]> {
      const name = 'journal_mysql'
      try {
        const present = await columnsOf(pool, table)
        const missing = JOURNAL_COLUMNS.filter((column) => !present.has(column))
        if (missing.length === 0) return [{ name, ok: true, detail: '004_payhooks_journal.sql' }]
        const problem = present.size === 0 ? `table ${table} is missing` : `${table} lacks ${missing.join(', ')}`
        if (createTable) return [{ name, ok: true, detail: `${problem}: init() applies 004_payhooks_journal.sql` }]
        return [
          {
            name,
            ok: false,
            severity: 'warning',
            detail: `${problem}: answers are not journaled (deliveries are unaffected)`,
            fix: 'run payhooks migrate --mysql URL, or apply sql/004_payhooks_journal.sql of @payhooks/mysql',
          },
        ]
      } catch {
        return [{ name, ok: false, severity: 'warning', detail: 'MySQL does not answer', fix: 'start MySQL' }]
      }
    },
    async shutdown() {
      sweeper?.stop()
      sweeper = undefined
    },
  }
}
