import { createHash } from 'node:crypto'
import { check } from '@payhooks/core/validations'
import { batchSql } from './maintenance.js'

// Every statement of the store, for one table. Times are the database's own (clock_timestamp(), not now(),
// which inside a transaction is its start), so the receivers' clocks play no part.

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/

/** `table`, checked: letters, digits and `_`, with one optional schema, so it never needs escaping. */
export function checkTable(table: unknown, where: string): string {
  check(
    typeof table === 'string' && TABLE_NAME.test(table),
    where,
    'table',
    'be a table name, optionally schema-qualified (letters, digits, _)',
    TypeError,
  )
  return table as string
}

const MAX_IDENTIFIER = 63

/** An index's name, in the table's schema: `<table><suffix>`, shortened with a hash beyond 63 bytes. */
export function listIndexName(table: string, suffix = '_list_idx'): string {
  const name = table.split('.').pop() as string
  if (name.length + suffix.length <= MAX_IDENTIFIER) return `${name}${suffix}`
  const hash = createHash('sha256').update(table).digest('hex').slice(0, 8)
  return `${name.slice(0, MAX_IDENTIFIER - suffix.length - hash.length - 1)}_${hash}${suffix}`
}

/** A checked table name with each part double-quoted. */
export function quoteTable(table: string): string {
  return table
    .split('.')
    .map((part) => `"${part}"`)
    .join('.')
}

/**
 * The `CREATE TABLE IF NOT EXISTS` statement of the store's table (what `init()` runs and
 * `sql/001_payhooks_events.sql` holds for the default name), for migrations of a table of another name. `token` is
 * the owner's token while the event is claimed and NULL once it is done; `expires_at` ends the claim's lease or
 * the done marker's retention.
 *
 * @example
 * import { createTableSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(createTableSql('billing.webhook_events'))
 */
export function createTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(checkTable(table, 'createTableSql'))} (
  event_id text PRIMARY KEY,
  token text,
  expires_at timestamptz NOT NULL
)`
}

/**
 * The statement adding the `body_digest` column to a store table made before it (what `init()` runs when the column
 * is missing and `sql/004_payhooks_events_body_digest.sql` holds for the default name). It keeps the digest of the
 * body each claim was made with, and so each done marker's: with it the receiver reports a copy of a handled event
 * whose bytes differ (`EventConflictError`). A table without it keeps working, without that report.
 *
 * @example
 * import { bodyDigestColumnSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(bodyDigestColumnSql('billing.webhook_events'))
 */
export function bodyDigestColumnSql(table: string): string {
  return `ALTER TABLE ${quoteTable(checkTable(table, 'bodyDigestColumnSql'))} ADD COLUMN IF NOT EXISTS body_digest text`
}

/**
 * The index the retention sweep reads (what `init()` builds, and `sql/012_payhooks_sweep_indexes.sql` holds for the
 * default name): the store's rows by `expires_at`, so each batch of a sweep reads only the rows it deletes, oldest
 * first. Build it `CONCURRENTLY` on a large table.
 *
 * @example
 * import { expiryIndexSql } from '@payhooks/postgres'
 *
 * await migrationClient.query(expiryIndexSql('billing.webhook_events'))
 */
export function expiryIndexSql(table: string): string {
  const t = quoteTable(checkTable(table, 'expiryIndexSql'))
  return `CREATE INDEX IF NOT EXISTS "${listIndexName(table, '_expiry_idx')}" ON ${t} (expires_at)`
}

/**
 * How long after `init()` an earlier release's table gets migration 012's index built in the background: only the
 * sweep reads it, and its first run is an interval after `init()`, so the build waits out a fleet's start.
 */
export const INDEX_DELAY_MS = 60_000

const later = (param: string) => `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`

export interface Statements {
  /** $1 event id, $2 token, $3 lease ms (and $4 body digest, with digests): one row when claimed. */
  claim: string
  /** $1 event id: `done`, `remaining_ms` and `body_digest` (null without digests) of the row holding it, if any. */
  state: string
  /** $1 event id, $2 token, $3 lease ms: no row once the lease ran out. */
  extend: string
  /** $1 event id, $2 token, $3 retention ms: no row once the lease ran out. */
  complete: string
  /** $1 event id, $2 token. */
  release: string
  /** $1 batch, $2 from: deletes at most a batch of the oldest rows past their expiry (`batchSql`). */
  sweep: string
}

/**
 * The store's statements on `table`; `digests` when it has the `body_digest` column. A claim (new, or taking over a
 * lease that ran out) writes its digest; `complete` leaves it, so the done marker keeps it.
 */
export function statements(table: string, digests: boolean): Statements {
  const t = quoteTable(table)
  return {
    claim: digests
      ? `INSERT INTO ${t} AS e (event_id, token, expires_at, body_digest) VALUES ($1, $2, ${later('$3')}, $4)
ON CONFLICT (event_id) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at, body_digest = EXCLUDED.body_digest
WHERE e.expires_at <= clock_timestamp()
RETURNING 1`
      : `INSERT INTO ${t} AS e (event_id, token, expires_at) VALUES ($1, $2, ${later('$3')})
ON CONFLICT (event_id) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
WHERE e.expires_at <= clock_timestamp()
RETURNING 1`,
    state: `SELECT token IS NULL AS done, extract(epoch FROM expires_at - clock_timestamp())::float8 * 1000 AS remaining_ms,
${digests ? 'body_digest' : 'NULL::text AS body_digest'} FROM ${t} WHERE event_id = $1`,
    // A lease that ran out is not the token's any more, even before another claim takes the event.
    extend: `UPDATE ${t} SET expires_at = ${later('$3')} WHERE event_id = $1 AND token = $2 AND expires_at > clock_timestamp()`,
    complete: `UPDATE ${t} SET token = NULL, expires_at = ${later('$3')} WHERE event_id = $1 AND token = $2
AND expires_at > clock_timestamp()`,
    release: `DELETE FROM ${t} WHERE event_id = $1 AND token = $2`,
    // By the expiry index, oldest first; a row another statement holds (a claim taking it over) is skipped.
    sweep: batchSql(t, 'expires_at', 'expires_at < statement_timestamp()'),
  }
}
