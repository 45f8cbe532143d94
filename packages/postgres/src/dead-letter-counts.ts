import type { Pool } from 'pg'
import { inTransaction } from './maintenance.js'
import { checkTable, listIndexName, quoteTable } from './sql.js'

// Migration 010: the letters counted by (status, code, event_type) in `<table>_counts`, kept by statement triggers on
// the letters' table, so every write (a park, a replay, a delete, a sweep; an earlier release's instance or an
// operator's own SQL too) moves the counts in its own transaction. Each session adds to one of SHARDS rows of a key
// (by its backend pid), so parks from many connections at once do not queue on one row lock until they commit. The
// function keeps the search_path it was made with, so a table named without its schema finds its counts whatever
// the writing session's search_path.

const SHARDS = 16

/** The counts table and its trigger function, in the letters' schema. */
export function countsNames(table: string) {
  const schema = table.includes('.') ? `${table.split('.')[0]}.` : ''
  return {
    counts: `${schema}${listIndexName(table, '_counts')}`,
    fn: `${schema}${listIndexName(table, '_count_fn')}`,
  }
}

/** The key of the row that says the counts are whole: written by the fill, or with the table when it was empty. */
const MARKER = "('', '', '', 0, 0)"

/**
 * The statements of migration 010 (what `init()` runs on a new table, and `sql/010_payhooks_dead_letters_kept_counts.sql`
 * holds for the default name, with the fill): `<table>_counts`, one row per (status, code, event type, shard) holding
 * how many letters it has, and the triggers keeping it, so `count()` sums a few rows instead of reading the letters.
 * Counts are trusted once the row `('', '', '', 0)` is there: `filled` writes it at once (for an empty table);
 * otherwise the store fills them in the background (or `migrate()` does) and counts the letters meanwhile.
 *
 * @example
 * import { createDeadLetterCountsSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(createDeadLetterCountsSql('billing.webhook_dead_letters'))
 */
export function createDeadLetterCountsSql(table: string, filled = false): string {
  const t = quoteTable(checkTable(table, 'createDeadLetterCountsSql'))
  const { counts, fn } = countsNames(table)
  const c = quoteTable(counts)
  const add = (select: string) => `INSERT INTO ${c} AS c (status, code, event_type, shard, n)
    ${select}
    ON CONFLICT (status, code, event_type, shard) DO UPDATE SET n = c.n + EXCLUDED.n;`
  const shard = `(pg_backend_pid() % ${SHARDS})::smallint`
  // Keys in one order, so two statements moving the same keys never deadlock.
  const byKey = 'GROUP BY status, code, event_type HAVING sum(d) <> 0 ORDER BY status, code, event_type'
  const moved = (rows: string) => `SELECT status, code, event_type, ${shard}, sum(d) FROM (${rows}) AS m ${byKey}`
  // Trigger names are the table's own: the same on every table. DROP then CREATE (no CREATE OR REPLACE before 14).
  const on = (event: string, referencing: string) => {
    const name = `payhooks_count_${event.toLowerCase()}`
    return `DROP TRIGGER IF EXISTS ${name} ON ${t};
CREATE TRIGGER ${name} AFTER ${event} ON ${t}
REFERENCING ${referencing} FOR EACH STATEMENT EXECUTE FUNCTION ${quoteTable(fn)}()`
  }
  return `CREATE TABLE IF NOT EXISTS ${c} (
  status text NOT NULL,
  code text NOT NULL,
  event_type text NOT NULL,
  shard smallint NOT NULL,
  n bigint NOT NULL,
  PRIMARY KEY (status, code, event_type, shard)
);
CREATE OR REPLACE FUNCTION ${quoteTable(fn)}() RETURNS trigger LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    ${add(moved('SELECT status, code, event_type, 1 AS d FROM new_rows'))}
  ELSIF TG_OP = 'DELETE' THEN
    ${add(moved('SELECT status, code, event_type, -1 AS d FROM old_rows'))}
  ELSE
    ${add(moved('SELECT status, code, event_type, 1 AS d FROM new_rows UNION ALL SELECT status, code, event_type, -1 FROM old_rows'))}
  END IF;
  RETURN NULL;
END $$;
${on('INSERT', 'NEW TABLE AS new_rows')};
${on('UPDATE', 'OLD TABLE AS old_rows NEW TABLE AS new_rows')};
${on('DELETE', 'OLD TABLE AS old_rows')}${filled ? `;\nINSERT INTO ${c} VALUES ${MARKER} ON CONFLICT DO NOTHING` : ''}`
}

/** Whether `<table>_counts` exists (so the triggers keep it), whether filled or not. */
export async function hasCounts(pool: Pool, table: string): Promise<boolean> {
  const { rows } = await pool.query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [
    quoteTable(countsNames(table).counts),
  ])
  return rows[0]?.found != null
}

/**
 * Fills the counts of a table that had letters before its triggers, exactly, without blocking writes: the letters
 * and the counts are read in one snapshot (REPEATABLE READ, read only), so what the triggers added for writes that
 * snapshot sees is taken off what it counts; the difference is then added in a short transaction of its own with
 * the marker, once (a second fill finds the marker and adds nothing). Resolves whether this call filled them.
 */
export async function fillDeadLetterCounts(pool: Pool, table: string): Promise<boolean> {
  const t = quoteTable(table)
  const c = quoteTable(countsNames(table).counts)
  const marked = `SELECT 1 FROM ${c} WHERE status = '' AND code = '' AND event_type = ''`
  const differences = await inTransaction(pool, async (client) => {
    await client.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
    if ((await client.query(marked)).rowCount) return undefined
    const { rows } = await client.query<{ status: string; code: string; event_type: string; n: string }>(
      `SELECT status, code, event_type, sum(n)::text AS n FROM (
  SELECT status, code, event_type, count(*) AS n FROM ${t} GROUP BY 1, 2, 3
  UNION ALL SELECT status, code, event_type, -n FROM ${c} WHERE status <> ''
) AS d GROUP BY 1, 2, 3 HAVING sum(n) <> 0 ORDER BY 1, 2, 3`,
    )
    return rows
  })
  if (differences === undefined) return false
  return inTransaction(pool, async (client) => {
    const first = await client.query(`INSERT INTO ${c} VALUES ${MARKER} ON CONFLICT DO NOTHING`)
    if (first.rowCount !== 1) return false
    if (differences.length > 0) {
      await client.query(
        `INSERT INTO ${c} AS c (status, code, event_type, shard, n)
SELECT status, code, event_type, 0, n FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS d(status, code, event_type, n)
ON CONFLICT (status, code, event_type, shard) DO UPDATE SET n = c.n + EXCLUDED.n`,
        [
          differences.map((row) => row.status),
          differences.map((row) => row.code),
          differences.map((row) => row.event_type),
          differences.map((row) => row.n),
        ],
      )
    }
    return true
  })
}

/**
 * The count query when the counts table exists: the sum of the matching counts once they are filled, else the
 * letters counted (`where` the filter on the letters, its parameters already in place).
 */
export function countedSql(table: string, where: string): string {
  const t = quoteTable(table)
  const c = quoteTable(countsNames(table).counts)
  const onCounts = where === '' ? " WHERE status <> ''" : `${where} AND status <> ''`
  return `SELECT (CASE WHEN EXISTS (SELECT 1 FROM ${c} WHERE status = '' AND code = '' AND event_type = '')
  THEN (SELECT coalesce(sum(n), 0) FROM ${c}${onCounts})
  ELSE (SELECT count(*) FROM ${t}${where}) END)::float8 AS count`
}
