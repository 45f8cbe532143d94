import { checkTable, quoteTable } from './sql.js'

/**
 * The pauses table (what `mysqlPauseStore`'s `init()` runs when the table is missing): a row per paused event type
 * (`*` for every type).
 *
 * @example
 * await connection.query(createPauseTableSql('webhook_pauses'))
 */
export function createPauseTableSql(table: string): string {
  const t = quoteTable(checkTable(table, 'createPauseTableSql'))
  return `CREATE TABLE IF NOT EXISTS ${t} (
  event_type VARBINARY(512) NOT NULL PRIMARY KEY,
  reason VARBINARY(1024) NOT NULL,
  since BIGINT NOT NULL,
  paused_by VARBINARY(512) NULL
)`
}

/** Every statement of the pause store, for one table. */
export function pauseStatements(table: string) {
  const t = quoteTable(checkTable(table, 'mysqlPauseStore'))
  return {
    pause: `INSERT INTO ${t} (event_type, reason, since, paused_by) VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE reason = VALUES(reason), since = VALUES(since), paused_by = VALUES(paused_by)`,
    resume: `DELETE FROM ${t} WHERE event_type = ?`,
    list: `SELECT event_type, reason, since, paused_by FROM ${t}`,
  }
}
