import { checkTable, quoteTable } from './sql.js'

/**
 * The pauses table (migration 016: what `postgresPauseStore`'s `init()` runs when the table is missing, and
 * `sql/016_payhooks_pauses.sql` holds for the default name): a row per paused event type (`*` for every type).
 *
 * @example
 * await migrationClient.query(createPauseTableSql('billing.webhook_pauses'))
 */
export function createPauseTableSql(table: string): string {
  const t = quoteTable(checkTable(table, 'createPauseTableSql'))
  return `CREATE TABLE IF NOT EXISTS ${t} (
  event_type text PRIMARY KEY,
  reason text NOT NULL,
  since timestamptz NOT NULL,
  paused_by text
)`
}

/** Every statement of the pause store, for one table. */
export function pauseStatements(table: string) {
  const t = quoteTable(checkTable(table, 'postgresPauseStore'))
  return {
    pause: `INSERT INTO ${t} (event_type, reason, since, paused_by) VALUES ($1, $2, $3, $4)
ON CONFLICT (event_type) DO UPDATE SET reason = EXCLUDED.reason, since = EXCLUDED.since, paused_by = EXCLUDED.paused_by`,
    resume: `DELETE FROM ${t} WHERE event_type = $1`,
    list: `SELECT event_type, reason, since, paused_by FROM ${t}`,
  }
}
