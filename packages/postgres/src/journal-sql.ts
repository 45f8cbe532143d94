import { createHash } from 'node:crypto'
import type { JournalListQuery } from '@payhooks/core'
import { checkTable, quoteTable } from './sql.js'

// Every statement of postgresJournal, for one table. Times are milliseconds since the epoch (bigint), so keyset
// cursors are exact.

/** Outcomes so common that the index of failures leaves them out (a list of those walks the time index). */
const ROUTINE = "('processed', 'duplicate')"

/** `<table>_<suffix>` in the table's schema, shortened with a hash beyond PostgreSQL's 63 bytes. */
function indexName(table: string, suffix: string): string {
  const name = table.split('.').pop() as string
  if (name.length + suffix.length + 1 <= 63) return `${name}_${suffix}`
  const hash = createHash('sha256').update(table).digest('hex').slice(0, 8)
  return `${name.slice(0, 63 - suffix.length - hash.length - 2)}_${hash}_${suffix}`
}

/**
 * The statements creating the journal's table and its indexes, `IF NOT EXISTS` (what `init()` runs, and
 * `sql/009_payhooks_journal.sql` then `sql/013_payhooks_journal_copies.sql` hold for the default name), for
 * migrations of a table of another name. One row per answer (or per count of copies alike, `copies`); the primary
 * key `(at, id)` orders lists and the retention sweep, `(event_id, at)` serves an event's timeline, and a partial
 * index by outcome serves lists of failures.
 *
 * @example
 * import { createJournalTableSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(createJournalTableSql('billing.webhook_journal'))
 */
export function createJournalTableSql(table: string): string {
  const t = quoteTable(checkTable(table, 'createJournalTableSql'))
  return `CREATE TABLE IF NOT EXISTS ${t} (
  at bigint NOT NULL,
  id text COLLATE "C" NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  event_type text NOT NULL,
  created_at text,
  status smallint NOT NULL,
  outcome text NOT NULL,
  instance text NOT NULL,
  duration_ms integer NOT NULL,
  secret_index smallint NOT NULL,
  secret_label text,
  copies integer,
  PRIMARY KEY (at, id)
);
CREATE INDEX IF NOT EXISTS ${indexName(table, 'event_idx')} ON ${t} (event_id, at);
CREATE INDEX IF NOT EXISTS ${indexName(table, 'outcome_idx')} ON ${t} (outcome, at DESC, id DESC)
  WHERE outcome NOT IN ${ROUTINE}`
}

/**
 * Migration 013: the `copies` column (how many answers alike a row stands for; null: one) on a journal table made
 * by 009, for migrations of a table of another name. Adding a nullable column rewrites nothing.
 *
 * @example
 * import { journalCopiesColumnSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(journalCopiesColumnSql('billing.webhook_journal'))
 */
export function journalCopiesColumnSql(table: string): string {
  return `ALTER TABLE ${quoteTable(checkTable(table, 'journalCopiesColumnSql'))} ADD COLUMN IF NOT EXISTS copies integer`
}

const COLUMNS =
  'id, at, event_id, event_type, created_at, status, outcome, instance, duration_ms, secret_index, secret_label'

/** The statements of one journal table; `copies`: whether it has the column of migration 013. */
export function journalStatements(table: string, copies = true) {
  const t = quoteTable(table)
  const columns = copies ? `${COLUMNS}, copies` : COLUMNS
  return {
    probe: `SELECT 1 FROM ${t} LIMIT 0`,
    // One statement per batch, whatever its size: the columns as arrays. A row held already (the batch written
    // again after a lost reply) is kept once.
    insert: `INSERT INTO ${t} (${columns})
SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::text[],
  $8::text[], $9::integer[], $10::smallint[], $11::text[]${copies ? ', $12::integer[]' : ''}) ON CONFLICT DO NOTHING`,
    answers: `SELECT ${columns} FROM ${t} WHERE event_id = $1 AND at >= $2 ORDER BY at, id`,
    counts: `SELECT at / 60000 * 60000 AS minute, outcome, ${copies ? 'sum(coalesce(copies, 1))' : 'count(*)'}::integer AS count
FROM ${t} WHERE at >= $1 AND at < $2 GROUP BY 1, 2`,
    // A batch of the oldest expired rows, by the primary key; rows another sweep holds are skipped, not waited for.
    sweep: `DELETE FROM ${t} WHERE ctid = ANY(ARRAY(
  SELECT ctid FROM ${t} WHERE at < $1 ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED))`,
    list(query: JournalListQuery, oldest: number) {
      const values: unknown[] = [Math.max(oldest, query.from ?? oldest)]
      const where = ['at >= $1']
      const add = (condition: (n: string) => string, value: unknown) => {
        values.push(value)
        where.push(condition(`$${values.length}`))
      }
      if (query.outcome !== undefined) add((n) => `outcome = ${n}`, query.outcome)
      // Said outright, so the planner takes the partial index of failures for them.
      if (query.outcome !== undefined && !ROUTINE.includes(`'${query.outcome}'`))
        where.push(`outcome NOT IN ${ROUTINE}`)
      if (query.eventType !== undefined) add((n) => `event_type = ${n}`, query.eventType)
      if (query.to !== undefined) add((n) => `at < ${n}`, query.to)
      if (query.after) {
        values.push(query.after.at, query.after.id)
        where.push(`(at, id) < ($${values.length - 1}, $${values.length})`)
      }
      values.push(query.limit)
      return {
        text: `SELECT ${columns} FROM ${t} WHERE ${where.join(' AND ')} ORDER BY at DESC, id DESC LIMIT $${values.length}`,
        values,
      }
    },
  }
}
