import type { DeadLetterCode, DeadLetterFilter, NormalizedDeadLetterQuery } from '@payhooks/core'
import { countedSql } from './dead-letter-counts.js'
import { batchSql } from './maintenance.js'
import { checkTable, listIndexName, quoteTable } from './sql.js'

// Every statement of the dead-letter store, for one table. The times are the receiver's (`parkedAt`, `replayedAt`
// are given to park and markReplayed), except the retention sweep's "now", which is the database's.

/** Why letters are parked: the receiver's `DeadLetterCode`s. */
const CODES = ['schema_mismatch', 'handler_failed', 'stale_event', 'paused'] as const

/**
 * The statement replacing a dead-letter table's check on `code` with one naming `codes`, when its check (the one
 * naming `handler_failed`) does not name `lacking` yet; nothing otherwise. 003 was this with the codes up to
 * `stale_event`, 015 with `paused`.
 */
export function widenCodeSql(table: string, codes: readonly string[], lacking: string): string {
  const t = quoteTable(checkTable(table, 'widenDeadLetterCodeSql'))
  return `DO $$
DECLARE
  old_check name;
BEGIN
  SELECT conname INTO old_check FROM pg_constraint
  WHERE conrelid = '${t}'::regclass AND contype = 'c'
    AND pg_get_constraintdef(oid) LIKE '%handler_failed%' AND pg_get_constraintdef(oid) NOT LIKE '%${lacking}%';
  IF old_check IS NOT NULL THEN
    EXECUTE format('ALTER TABLE ${t} DROP CONSTRAINT %I', old_check);
    ALTER TABLE ${t} ADD CHECK (code IN (${codes.map((code) => `'${code}'`).join(', ')}));
  END IF;
END $$`
}

/**
 * Lets a dead-letter table made before `stale_event` or `paused` existed take letters of those codes: replaces its
 * check on `code` with one naming every code, and does nothing on a table that names them already (what `init()`
 * runs after creating the table, and `sql/015_payhooks_dead_letters_paused.sql` holds for the default name; `sql/003`
 * did the same before `paused`).
 *
 * @example
 * await migrationClient.query(widenDeadLetterCodeSql('billing.webhook_dead_letters'))
 */
export function widenDeadLetterCodeSql(table: string): string {
  return widenCodeSql(table, CODES, 'paused')
}

/**
 * The indexes that let a count or a page filtered by code or event type read only the letters it counts or shows
 * (`IF NOT EXISTS`: what `init()` runs after creating the table, and `sql/008_payhooks_dead_letters_counts.sql`
 * holds for the default name). A count is an index-only scan of the matching letters; a page, however deep by
 * keyset, a few index pages.
 *
 * @example
 * await migrationClient.query(createDeadLetterCountIndexesSql('billing.webhook_dead_letters'))
 */
export function createDeadLetterCountIndexesSql(table: string): string {
  const t = quoteTable(checkTable(table, 'createDeadLetterCountIndexesSql'))
  return `CREATE INDEX IF NOT EXISTS "${listIndexName(table, '_code_idx')}" ON ${t} (status, code, parked_at DESC, event_id DESC);
CREATE INDEX IF NOT EXISTS "${listIndexName(table, '_type_idx')}" ON ${t} (status, event_type, parked_at DESC, event_id DESC)`
}

/**
 * The index that lets a count or a page within a window of the events' `created_at` (`createdAfter`,
 * `createdBefore`) read only the letters in the window (migration 014: what `init()` runs after creating the table,
 * and `sql/014_payhooks_dead_letters_created.sql` holds for the default name): a count is an index-only range scan,
 * whatever the code, type or parked window; a page, the window's letters by it, sorted, when the planner finds that
 * cheaper than walking the list index.
 *
 * @example
 * await migrationClient.query(createDeadLetterCreatedIndexSql('billing.webhook_dead_letters'))
 */
export function createDeadLetterCreatedIndexSql(table: string): string {
  const t = quoteTable(checkTable(table, 'createDeadLetterCreatedIndexSql'))
  return `CREATE INDEX IF NOT EXISTS "${listIndexName(table, '_created_idx')}" ON ${t} (status, created_at) INCLUDE (code, event_type, parked_at)`
}

/**
 * The index the retention sweep reads (migration 010): the replayed letters by `replayed_at`, so each batch of a
 * sweep reads only the letters it deletes, oldest first.
 */
export function deadLetterSweepIndexSql(table: string): string {
  const t = quoteTable(checkTable(table, 'deadLetterSweepIndexSql'))
  return `CREATE INDEX IF NOT EXISTS "${listIndexName(table, '_sweep_idx')}" ON ${t} (replayed_at) WHERE status = 'replayed'`
}

/**
 * The statements creating the dead-letter table and its list index, `IF NOT EXISTS` (what `init()` runs and
 * `sql/002_payhooks_dead_letters.sql` holds for the default name), for migrations of a table of another name.
 * Its check on `code` predates `stale_event`: run {@link widenDeadLetterCodeSql} after it (as `init()` does).
 * One row per `event_id`; `body` holds the exact bytes received.
 *
 * @example
 * import { createDeadLetterTableSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(createDeadLetterTableSql('billing.webhook_dead_letters'))
 */
export function createDeadLetterTableSql(table: string): string {
  const t = quoteTable(checkTable(table, 'createDeadLetterTableSql'))
  return `CREATE TABLE IF NOT EXISTS ${t} (
  event_id text COLLATE "C" PRIMARY KEY,
  event_type text NOT NULL,
  body bytea NOT NULL,
  headers jsonb NOT NULL,
  code text NOT NULL CHECK (code IN ('schema_mismatch', 'handler_failed')),
  reason text NOT NULL,
  created_at timestamptz,
  first_parked_at timestamptz NOT NULL,
  parked_at timestamptz NOT NULL,
  park_count integer NOT NULL,
  status text NOT NULL CHECK (status IN ('parked', 'replayed')),
  replayed_at timestamptz
);
CREATE INDEX IF NOT EXISTS "${listIndexName(table)}" ON ${t} (status, parked_at DESC, event_id DESC)`
}

const COLUMNS =
  'event_id, event_type, body, headers, code, reason, created_at, first_parked_at, parked_at, park_count, status, replayed_at'

/** A row of the table, as node-postgres parses it. */
export interface DeadLetterRow {
  event_id: string
  event_type: string
  body: Buffer
  headers: Record<string, string>
  code: DeadLetterCode
  reason: string
  created_at: Date | null
  first_parked_at: Date
  parked_at: Date
  park_count: number
  status: 'parked' | 'replayed'
  replayed_at: Date | null
}

export interface DeadLetterStatements {
  /** Reads every column and nothing else: what `init()` runs when it does not create the table. */
  probe: string
  /**
   * $1 event id, $2 event type, $3 body, $4 headers (JSON text), $5 code, $6 reason, $7 created at, $8 parked at.
   * Returns the row when it was inserted or parked again; none when a replayed letter, or a parked one of other
   * bytes, was left as it is (read it with `get`).
   */
  park: string
  /** $1 event id. */
  get: string
  /** $1 event id, $2 replayed at: one row when there was a letter. */
  markReplayed: string
  remove: string
  /** $1 batch, $2 from, $3 retention ms: deletes at most a batch of the oldest replayed letters past it (`batchSql`). */
  sweep: string
  /** The list query and its parameters. */
  list(query: NormalizedDeadLetterQuery): { text: string; values: unknown[] }
  /**
   * The count query (`count` column) and its parameters; with `counted` (the table has migration 010's counts), the
   * sum of the kept counts when the filter has no lower parked bound nor created window and they are filled (less
   * the letters parked since its upper bound, when it has one).
   */
  count(
    query: DeadLetterFilter & { status: NormalizedDeadLetterQuery['status'] },
    counted?: boolean,
  ): { text: string; values: unknown[] }
}

/** The WHERE clause of a list or count, its parameters pushed onto `values`. */
function filterOf(query: DeadLetterFilter & { status: string }, values: unknown[]): string {
  const param = (value: unknown) => {
    values.push(value)
    return `$${values.length}`
  }
  const where: string[] = []
  if (query.status !== 'all') where.push(`status = ${param(query.status)}`)
  if (query.eventType !== undefined) where.push(`event_type = ${param(query.eventType)}`)
  if (query.code !== undefined) where.push(`code = ${param(query.code)}`)
  if (query.parkedAfter !== undefined) where.push(`parked_at >= ${param(query.parkedAfter)}`)
  if (query.parkedBefore !== undefined) where.push(`parked_at < ${param(query.parkedBefore)}`)
  if (query.createdAfter !== undefined) where.push(`created_at >= ${param(query.createdAfter)}`)
  if (query.createdBefore !== undefined) where.push(`created_at < ${param(query.createdBefore)}`)
  const { position, order } = query as Partial<NormalizedDeadLetterQuery>
  if (position) {
    const at = param(new Date(position.parkedAt))
    const id = param(position.eventId)
    where.push(`(parked_at, event_id) ${order === 'oldest' ? '>' : '<'} (${at}::timestamptz, ${id}::text)`)
  }
  return where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''
}

export function deadLetterStatements(table: string): DeadLetterStatements {
  const t = quoteTable(table)
  return {
    probe: `SELECT ${COLUMNS} FROM ${t} LIMIT 0`,
    park: `INSERT INTO ${t} AS d (${COLUMNS})
VALUES ($1, $2, $3, $4::jsonb, $5, $6, $7, $8, $8, 1, 'parked', NULL)
ON CONFLICT (event_id) DO UPDATE SET event_type = EXCLUDED.event_type,
  headers = EXCLUDED.headers, code = EXCLUDED.code, reason = EXCLUDED.reason, created_at = EXCLUDED.created_at,
  parked_at = EXCLUDED.parked_at, park_count = d.park_count + 1
WHERE d.status = 'parked' AND d.body = EXCLUDED.body
RETURNING ${COLUMNS}`,
    get: `SELECT ${COLUMNS} FROM ${t} WHERE event_id = $1`,
    markReplayed: `UPDATE ${t} SET status = 'replayed', replayed_at = $2 WHERE event_id = $1`,
    remove: `DELETE FROM ${t} WHERE event_id = $1`,
    // By the sweep index, oldest first; letters another statement holds are skipped, not waited for.
    sweep: batchSql(
      t,
      'replayed_at',
      "status = 'replayed' AND replayed_at < statement_timestamp() - $3::float8 * interval '1 millisecond'",
    ),
    list(query) {
      const values: unknown[] = []
      const filter = filterOf(query, values)
      values.push(query.limit, query.offset)
      const direction = query.order === 'oldest' ? 'ASC' : 'DESC'
      const text = `SELECT ${COLUMNS} FROM ${t}${filter}
ORDER BY parked_at ${direction}, event_id ${direction} LIMIT $${values.length - 1} OFFSET $${values.length}`
      return { text, values }
    },
    count(query, counted = false) {
      const values: unknown[] = []
      // With status 'all' no index leads with parked_at: the letters since the bound would be a scan of the table.
      // A created window is counted on its index (the kept counts know nothing of created_at).
      const created = query.createdAfter !== undefined || query.createdBefore !== undefined
      if (
        counted &&
        !created &&
        query.parkedAfter === undefined &&
        (query.parkedBefore === undefined || query.status !== 'all')
      ) {
        const where = filterOf({ ...query, parkedBefore: undefined }, values)
        if (query.parkedBefore === undefined) return { text: countedSql(table, where), values }
        // Bounded above only (a replay-all run is fixed at its start): the kept count less the letters parked since,
        // the few newest by the parked_at index, in one statement's snapshot. Counting the rows below the bound read
        // the whole filter (100,000 letters: 230 to 270 ms, against about 1 ms).
        values.push(query.parkedBefore)
        const since = `${where === '' ? ' WHERE' : `${where} AND`} parked_at >= $${values.length}`
        const text = `SELECT ((${countedSql(table, where)}) - (SELECT count(*) FROM ${t}${since}))::float8 AS count`
        return { text, values }
      }
      const where = filterOf(query, values)
      return { text: `SELECT count(*)::float8 AS count FROM ${t}${where}`, values }
    },
  }
}
