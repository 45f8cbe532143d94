import { batchSql } from './maintenance.js'
import { checkTable, listIndexName, quoteTable } from './sql.js'

// Ordering fences (issue 24): one row per ordering key, beside the store's table. `holder` is the token of the claim
// handling an event of the key, until `held_until`; `mark_*` the newest event handled, kept until `keep_until`;
// `fence_token` the fencing token of the key's last holder (migration 006).

/** The fence table of the store table `table`: `<table>_fences`, or undefined when that name would be too long. */
export function fenceTableOf(table: string): string | undefined {
  const name = `${table}_fences`
  try {
    return checkTable(name, 'postgresStore')
  } catch {
    return undefined
  }
}

/**
 * The `CREATE TABLE IF NOT EXISTS` statement of the ordering fences of the store table `table` (what `init()` runs
 * and `sql/005_payhooks_events_fences.sql` holds for the default name): `<table>_fences`.
 *
 * @example
 * import { createFenceTableSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(createFenceTableSql('billing.webhook_events')) // billing.webhook_events_fences
 */
export function createFenceTableSql(table: string): string {
  const fences = fenceTableOf(checkTable(table, 'createFenceTableSql'))
  if (fences === undefined) throw new TypeError(`createFenceTableSql: table must leave room for a _fences suffix`)
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(fences)} (
  ordering_key text PRIMARY KEY,
  holder text,
  held_until timestamptz NOT NULL,
  mark_at float8,
  mark_type text,
  mark_id text,
  keep_until timestamptz NOT NULL
)`
}

/**
 * The statement adding the `fence_token` column to a fence table made before it (what the store runs on first use
 * when the column is missing and `sql/006_payhooks_events_fence_token.sql` holds for the default name): the fencing
 * token of the key's last holder, `context.ordering.token`.
 *
 * @example
 * import { fenceTokenColumnSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(fenceTokenColumnSql('billing.webhook_events')) // on billing.webhook_events_fences
 */
export function fenceTokenColumnSql(table: string): string {
  const fences = fenceTableOf(checkTable(table, 'fenceTokenColumnSql'))
  if (fences === undefined) throw new TypeError(`fenceTokenColumnSql: table must leave room for a _fences suffix`)
  return `ALTER TABLE ${quoteTable(fences)} ADD COLUMN IF NOT EXISTS fence_token bigint NOT NULL DEFAULT 0`
}

/**
 * The statements recording who holds each ordering key and since when, for `heldKeys()` (what the store runs on first
 * use when they are missing and `sql/007_payhooks_events_held_keys.sql` holds for the default name): the holder's
 * event id and type and when it took the key, and an index of the held rows by that time, so listing them reads the
 * held keys only, never the marks.
 *
 * @example
 * import { heldKeysSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(heldKeysSql('billing.webhook_events')) // on billing.webhook_events_fences
 */
export function heldKeysSql(table: string): string {
  const fences = fenceTableOf(checkTable(table, 'heldKeysSql'))
  if (fences === undefined) throw new TypeError(`heldKeysSql: table must leave room for a _fences suffix`)
  const index = `${fences.split('.').pop()}_held`
  return `ALTER TABLE ${quoteTable(fences)} ADD COLUMN IF NOT EXISTS held_since timestamptz,
  ADD COLUMN IF NOT EXISTS holder_event_id text, ADD COLUMN IF NOT EXISTS holder_event_type text;
CREATE INDEX IF NOT EXISTS ${quoteTable(index)} ON ${quoteTable(fences)} (held_since, ordering_key) WHERE holder IS NOT NULL`
}

/**
 * The index the fences' sweep reads (what the store builds on first use, and `sql/012_payhooks_sweep_indexes.sql`
 * holds for the default name): the fences by `keep_until`, so each batch of a sweep reads only the rows it deletes.
 *
 * @example
 * import { fenceExpiryIndexSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(fenceExpiryIndexSql('billing.webhook_events')) // on billing.webhook_events_fences
 */
export function fenceExpiryIndexSql(table: string): string {
  const fences = fenceTableOf(checkTable(table, 'fenceExpiryIndexSql'))
  if (fences === undefined) throw new TypeError(`fenceExpiryIndexSql: table must leave room for a _fences suffix`)
  return `CREATE INDEX IF NOT EXISTS "${listIndexName(fences, '_keep_idx')}" ON ${quoteTable(fences)} (keep_until)`
}

/** The database's clock in microseconds since the epoch: a fencing token never below it. */
const MICROS = `(extract(epoch FROM clock_timestamp()) * 1000000)::bigint`

const later = (param: string) => `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`

export interface FenceStatements {
  /**
   * $1 key, $2 token, $3 lease ms: one row (the live mark, or nulls, and the new fencing token) when the key was free
   * and is now held.
   */
  enter: string
  /** $1 key: `remaining_ms` of the holder's lease (and since when it holds the key, `since_ms`, with 007). */
  holder: string
  /** $1 limit: the keys held now, longest held first (with the columns of migration 007). */
  held: string
  /**
   * The store's claim statements with the fence's step joined to each, as one statement (so one commit): `$1`
   * event id and `$2` token as in the store's statement, then the fence's parameters.
   */
  /** $1 event id, $2 token, $3 lease ms, $4 key: no row when the lease ran out or the key is not the token's. */
  extend: string
  /**
   * $1 event id, $2 token, $3 retention ms, $4 key, $5 at, $6 event type: no row (and nothing changed) when the lease
   * ran out or another claim took the key, so a holder frozen past its lease never commits.
   */
  complete: string
  /** $1 event id, $2 token, $3 key. */
  release: string
  /** $1 batch, $2 from: deletes at most a batch of the fences past their keep, oldest first (`batchSql`). */
  sweep: string
}

/**
 * The fence statements on `fences`, joined to the store table `table`'s statements. A newer mark compares (at, type,
 * id) with the C collation, as JavaScript compares ASCII; a mark past its `keep_until` counts as none.
 */
export function fenceStatements(table: string, fences: string, holders = false): FenceStatements {
  const t = quoteTable(table)
  const f = quoteTable(fences)
  const live = 'f.keep_until > clock_timestamp()'
  // Who held the key and since when matter only while it is held: a key let go keeps none of it (a fence row kept
  // for its mark is then about 70 bytes smaller, issue 49).
  const clear = holders ? ', held_since = NULL, holder_event_id = NULL, holder_event_type = NULL' : ''
  const newer = `(f.mark_at IS NULL OR NOT (${live}) OR ROW(f.mark_at, f.mark_type COLLATE "C", f.mark_id COLLATE "C") < ROW($5::float8, $6::text COLLATE "C", $1::text COLLATE "C"))`
  return {
    enter: `INSERT INTO ${f} AS f (ordering_key, holder, held_until, keep_until, fence_token${holders ? ', held_since, holder_event_id, holder_event_type' : ''})
VALUES ($1, $2, ${later('$3')}, ${later('$3')}, ${MICROS}${holders ? ', clock_timestamp(), $4, $5' : ''})
ON CONFLICT (ordering_key) DO UPDATE SET holder = EXCLUDED.holder, held_until = EXCLUDED.held_until,${holders ? ' held_since = EXCLUDED.held_since,\nholder_event_id = EXCLUDED.holder_event_id, holder_event_type = EXCLUDED.holder_event_type,' : ''}
keep_until = GREATEST(f.keep_until, EXCLUDED.keep_until), fence_token = GREATEST(f.fence_token + 1, EXCLUDED.fence_token)
WHERE f.holder IS NULL OR f.held_until <= clock_timestamp()
RETURNING CASE WHEN ${live} THEN f.mark_at END AS mark_at, CASE WHEN ${live} THEN f.mark_type END AS mark_type,
CASE WHEN ${live} THEN f.mark_id END AS mark_id, f.fence_token::float8 AS fence_token`,
    holder: `SELECT extract(epoch FROM held_until - clock_timestamp())::float8 * 1000 AS remaining_ms${holders ? ',\nextract(epoch FROM held_since)::float8 * 1000 AS since_ms' : ''} FROM ${f}
WHERE ordering_key = $1 AND holder IS NOT NULL`,
    held: `SELECT ordering_key, holder_event_id, holder_event_type, extract(epoch FROM held_since)::float8 * 1000 AS since_ms,
extract(epoch FROM held_until)::float8 * 1000 AS until_ms, fence_token::float8 AS fence_token FROM ${f}
WHERE holder IS NOT NULL AND held_since IS NOT NULL AND held_until > clock_timestamp()
ORDER BY held_since, ordering_key LIMIT $1`,
    extend: `WITH fence AS (UPDATE ${f} SET held_until = ${later('$3')}, keep_until = GREATEST(keep_until, ${later('$3')})
WHERE ordering_key = $4 AND holder = $2 AND held_until > clock_timestamp() RETURNING 1)
UPDATE ${t} SET expires_at = ${later('$3')} WHERE event_id = $1 AND token = $2 AND expires_at > clock_timestamp()
AND EXISTS (SELECT 1 FROM fence)`,
    complete: `WITH fence AS (UPDATE ${f} AS f SET holder = NULL${clear},
mark_at = CASE WHEN ${newer} THEN $5::float8 ELSE f.mark_at END,
mark_type = CASE WHEN ${newer} THEN $6::text ELSE f.mark_type END,
mark_id = CASE WHEN ${newer} THEN $1::text ELSE f.mark_id END,
keep_until = CASE WHEN ${newer} THEN GREATEST(f.keep_until, ${later('$3')}) ELSE f.keep_until END
WHERE f.ordering_key = $4 AND f.holder = $2 AND f.held_until > clock_timestamp() RETURNING 1)
UPDATE ${t} SET token = NULL, expires_at = ${later('$3')} WHERE event_id = $1 AND token = $2
AND expires_at > clock_timestamp() AND EXISTS (SELECT 1 FROM fence)`,
    release: `WITH fence AS (UPDATE ${f} SET holder = NULL${clear} WHERE ordering_key = $3 AND holder = $2)
DELETE FROM ${t} WHERE event_id = $1 AND token = $2`,
    sweep: batchSql(
      f,
      'keep_until',
      'keep_until < statement_timestamp() AND (holder IS NULL OR held_until < statement_timestamp())',
    ),
  }
}
