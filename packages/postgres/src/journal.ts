import { type Journal, type JournalRecord, journalRetention } from '@payhooks/core'
import { nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { postgresHealth } from './health.js'
import { createJournalTableSql, journalCopiesColumnSql, journalStatements } from './journal-sql.js'
import { createOnce, startSweeper } from './maintenance.js'
import { alterWithin } from './schema-change.js'
import { checkTable } from './sql.js'
import type { PostgresJournalOptions } from './types.js'

interface JournalRow {
  id: string
  at: string
  event_id: string
  event_type: string
  created_at: string | null
  status: number
  outcome: string
  instance: string
  duration_ms: number
  secret_index: number
  secret_label: string | null
  copies?: number | null
}

function toRecord(row: JournalRow): JournalRecord {
  const record = {
    id: row.id,
    at: Number(row.at),
    eventId: row.event_id,
    eventType: row.event_type,
    createdAt: row.created_at,
    status: row.status,
    outcome: row.outcome,
    instance: row.instance,
    durationMs: row.duration_ms,
    secretIndex: row.secret_index,
  }
  const labeled = row.secret_label === null ? record : { ...record, secretLabel: row.secret_label }
  return row.copies === null || row.copies === undefined ? labeled : { ...labeled, copies: row.copies }
}

const hasColumn = async (pool: Pool, table: string, column: string) =>
  (
    await pool.query(
      'SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped',
      [table, column],
    )
  ).rows.length > 0

/** PostgreSQL text cannot hold NUL; an instance name or label with one is kept with U+FFFD instead. */
const text = (value: string) => value.replaceAll('\u0000', '\uFFFD')

/**
 * The answers of a receiver fleet in a PostgreSQL table, for `createWebhooks({ journal })`: `webhooks.events.get`,
 * `list` and `counts` from any instance. Each batch of answers is one multi-row `INSERT` (the columns as arrays),
 * written off the hot path. Rows past `retentionMs` are never returned, and each instance deletes them every
 * `sweepIntervalMs` in batches of `sweepBatch` by the primary key's time, each batch its own short statement that
 * skips rows another sweep holds: no long lock. The table is created on first use unless `createTable` is false
 * (then run `sql/009_payhooks_journal.sql` and `sql/013_payhooks_journal_copies.sql`, or `payhooks migrate`, as a
 * migration; without 013 a count of copies is kept as one row, and `init()` warns). A batch written again (after a
 * lost reply) keeps each row once; `init()` is tried again after it failed.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { postgresJournal, postgresStore } from '@payhooks/postgres'
 * import pg from 'pg'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * const webhooks = createWebhooks({ secret, store: postgresStore(pool), journal: postgresJournal(pool) })
 */
export function postgresJournal(
  pool: Pool,
  options: PostgresJournalOptions = {},
): Journal & { sweep(): Promise<number> } {
  const where = 'postgresJournal'
  const table = checkTable(options.table ?? 'payhooks_journal', where)
  const createTable = options.createTable ?? true
  const retentionMs = journalRetention(options.retentionMs, where)
  const sweepIntervalMs = nonNegativeNumber(options.sweepIntervalMs ?? 600_000, where, 'sweepIntervalMs')
  const sweepBatch = positiveInteger(options.sweepBatch ?? 1000, where, 'sweepBatch')
  const logger = options.logger ?? console
  let sql = journalStatements(table, false)
  let sweeper: { stop(): void } | undefined
  let warned = false

  /** Deletes every row past retention, a batch per statement; resolves how many. */
  async function sweep(): Promise<number> {
    const before = Date.now() - retentionMs
    let total = 0
    for (;;) {
      const deleted = (await pool.query(sql.sweep, [before, sweepBatch])).rowCount ?? 0
      total += deleted
      if (deleted < sweepBatch) return total
    }
  }

  return {
    retentionMs,
    async init() {
      if (createTable) {
        await createOnce(pool, table, createJournalTableSql(table))
        // An earlier release's table: the column of 013 added (a nullable column: nothing rewritten).
        if (!(await hasColumn(pool, table, 'copies'))) {
          await alterWithin(pool, '013', table, journalCopiesColumnSql(table), 2000)
        }
      } else await pool.query(sql.probe)
      const copies = await hasColumn(pool, table, 'copies')
      sql = journalStatements(table, copies)
      if (!copies && !warned) {
        warned = true
        ;(logger.warn ?? logger.error).call(
          logger,
          `[payhooks] ${where}: ${table} has no column copies (migration 013: payhooks migrate --postgres, or sql/013_payhooks_journal_copies.sql): a count of copies is kept as one row`,
        )
      }
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `${where}: sweep of ${table}`)
      }
    },
    async write(records) {
      const columns: unknown[][] = Array.from({ length: 12 }, () => [])
      for (const r of records) {
        const row = [
          r.id,
          r.at,
          text(r.eventId),
          text(r.eventType),
          r.createdAt === null ? null : text(r.createdAt),
          r.status,
          text(r.outcome),
          text(r.instance),
          Math.min(Math.round(r.durationMs), 2_147_483_647),
          r.secretIndex,
          r.secretLabel === undefined ? null : text(r.secretLabel),
          r.copies ?? null,
        ]
        for (let i = 0; i < row.length; i++) (columns[i] as unknown[]).push(row[i])
      }
      await pool.query(sql.insert, sql.insert.includes('$12') ? columns : columns.slice(0, 11))
    },
    async answers(eventId) {
      const { rows } = await pool.query<JournalRow>(sql.answers, [eventId, Date.now() - retentionMs])
      return rows.map(toRecord)
    },
    async list(query) {
      const { text: statement, values } = sql.list(query, Date.now() - retentionMs)
      const { rows } = await pool.query<JournalRow>(statement, values)
      return rows.map(toRecord)
    },
    async counts(from, to) {
      const oldest = Date.now() - retentionMs
      const { rows } = await pool.query<{ minute: string; outcome: string; count: number }>(sql.counts, [from, to])
      return rows
        .map((row) => ({ minute: Number(row.minute), outcome: row.outcome, count: row.count }))
        .filter((row) => row.minute + 60_000 > oldest)
    },
    sweep,
    // Its table, columns and indexes (migration 009), as warnings: the journal is off the delivery path.
    health: () => postgresHealth(pool, { name: 'journal_postgres', store: 'journal', table, createTable }),
    async shutdown() {
      sweeper?.stop()
      sweeper = undefined
    },
  }
}
