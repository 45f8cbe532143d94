import type { JournalListQuery } from '@payhooks/core'
import { checkTable, MAX_KEY_BYTES, quoteTable } from './sql.js'

// Every statement of mysqlJournal, for one table. Times are milliseconds since the epoch (BIGINT), so keyset cursors
// are exact; ids, event ids, types and outcomes are VARBINARY, compared and ordered byte for byte (as PostgreSQL's
// COLLATE "C" does).

/**
 * The `CREATE TABLE IF NOT EXISTS` statement of the journal's table (what `init()` runs and
 * `sql/004_payhooks_journal.sql` holds for the default name). One row per answer (or per count of copies alike,
 * `copies`); the primary key `(at, id)` orders lists and the retention sweep, `(event_id, at)` serves an event's
 * timeline, `(outcome, at, id)` lists by outcome.
 *
 * @example
 * import { createJournalTableSql } from '@payhooks/mysql'
 *
 * await connection.query(createJournalTableSql('billing_webhook_journal'))
 */
export function createJournalTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(checkTable(table, 'createJournalTableSql'))} (
  at BIGINT NOT NULL,
  id VARBINARY(255) NOT NULL,
  event_id VARBINARY(${MAX_KEY_BYTES}) NOT NULL,
  event_type VARBINARY(1024) NOT NULL,
  created_at TEXT CHARACTER SET utf8mb4 NULL,
  status SMALLINT NOT NULL,
  outcome VARBINARY(64) NOT NULL,
  instance TEXT CHARACTER SET utf8mb4 NOT NULL,
  duration_ms INT NOT NULL,
  secret_index SMALLINT NOT NULL,
  secret_label TEXT CHARACTER SET utf8mb4 NULL,
  copies INT NULL,
  PRIMARY KEY (at, id),
  KEY event_idx (event_id, at),
  KEY outcome_idx (outcome, at, id)
) ENGINE=InnoDB`
}

/** The columns of the journal's table, for its health check. */
export const JOURNAL_COLUMNS = [
  'at',
  'id',
  'event_id',
  'event_type',
  'created_at',
  'status',
  'outcome',
  'instance',
  'duration_ms',
  'secret_index',
  'secret_label',
  'copies',
]

const COLUMNS = JOURNAL_COLUMNS.join(', ')

/** The statements of one journal table. */
export function journalStatements(table: string) {
  const t = quoteTable(table)
  return {
    probe: `SELECT ${COLUMNS} FROM ${t} LIMIT 0`,
    // One statement per batch (mysql2 expands the rows); a row held already (the batch written again after a lost
    // reply) is kept once, without IGNORE, which would also turn a value too long into a warning.
    insert: `INSERT INTO ${t} (${COLUMNS}) VALUES ? ON DUPLICATE KEY UPDATE id = id`,
    answers: `SELECT ${COLUMNS} FROM ${t} WHERE event_id = ? AND at >= ? ORDER BY at, id`,
    counts: `SELECT at DIV 60000 * 60000 AS minute, outcome, SUM(COALESCE(copies, 1)) AS count
FROM ${t} WHERE at >= ? AND at < ? GROUP BY minute, outcome`,
    sweep: `DELETE FROM ${t} WHERE at < ? ORDER BY at LIMIT ?`,
    list(query: JournalListQuery, oldest: number) {
      const values: unknown[] = [Math.max(oldest, query.from ?? oldest)]
      const where = ['at >= ?']
      if (query.outcome !== undefined) {
        where.push('outcome = ?')
        values.push(query.outcome)
      }
      if (query.eventType !== undefined) {
        where.push('event_type = ?')
        values.push(query.eventType)
      }
      if (query.to !== undefined) {
        where.push('at < ?')
        values.push(query.to)
      }
      if (query.after) {
        where.push('(at < ? OR (at = ? AND id < CAST(? AS BINARY)))')
        values.push(query.after.at, query.after.at, query.after.id)
      }
      values.push(query.limit)
      return {
        text: `SELECT ${COLUMNS} FROM ${t} WHERE ${where.join(' AND ')} ORDER BY at DESC, id DESC LIMIT ?`,
        values,
      }
    },
  }
}
