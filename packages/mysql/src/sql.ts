import { check } from '@payhooks/core/validations'

// Every statement of the store, for one table, in SQL MySQL 8 and MariaDB 10.6+ share. Times are the database's own
// (UTC_TIMESTAMP(6): the start of each statement, not of its transaction), so the receivers' clocks play no part.
// Keys (event ids, ordering keys) are VARBINARY: compared byte for byte, with no collation folding case or padding
// trailing spaces (utf8mb4_bin pads them, and the no-pad binary collations differ between MySQL and MariaDB).

const TABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,55}(\.[A-Za-z_][A-Za-z0-9_]{0,63})?$/

/** The longest event id or ordering key the tables keep, in bytes of UTF-8. */
export const MAX_KEY_BYTES = 512

/** `table`, checked: letters, digits and `_`, with one optional database, leaving room for `_fences`. */
export function checkTable(table: unknown, where: string): string {
  check(
    typeof table === 'string' && TABLE_NAME.test(table),
    where,
    'table',
    'be a table name, optionally database-qualified (letters, digits, _; at most 56 characters)',
    TypeError,
  )
  return table as string
}

/** A checked table name with each part in backticks. */
export function quoteTable(table: string): string {
  return table
    .split('.')
    .map((part) => `\`${part}\``)
    .join('.')
}

/** The fence table of the store table `table`: `<table>_fences`. */
export const fenceTableOf = (table: string) => `${table}_fences`

/**
 * The `CREATE TABLE IF NOT EXISTS` statement of the store's table (what `init()` runs and
 * `sql/001_payhooks_events.sql` holds for the default name). `token` is the owner's token while the event is claimed
 * and NULL once it is done; `expires_at` (UTC) ends the claim's lease or the done marker's retention, indexed for the
 * sweep (index names are the table's own in MySQL); `body_digest` is the digest of the body the claim was made with.
 *
 * @example
 * import { createTableSql } from '@payhooks/mysql'
 *
 * await connection.query(createTableSql('billing_webhook_events'))
 */
export function createTableSql(table: string): string {
  const name = checkTable(table, 'createTableSql')
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(name)} (
  event_id VARBINARY(${MAX_KEY_BYTES}) NOT NULL PRIMARY KEY,
  token VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  expires_at DATETIME(6) NOT NULL,
  body_digest CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
  KEY expiry_idx (expires_at)
) ENGINE=InnoDB`
}

/**
 * The `CREATE TABLE IF NOT EXISTS` statement of the ordering fences of the store table `table` (what `init()` runs
 * and `sql/002_payhooks_events_fences.sql` holds for the default name): `<table>_fences`, one row per ordering key.
 * `holder` is the token of the claim handling an event of the key until `held_until`; `mark_*` the newest event
 * handled, kept until `keep_until`; `fence_token` the fencing token of the key's last holder.
 *
 * @example
 * import { createFenceTableSql } from '@payhooks/mysql'
 *
 * await connection.query(createFenceTableSql('billing_webhook_events')) // billing_webhook_events_fences
 */
export function createFenceTableSql(table: string): string {
  const fences = fenceTableOf(checkTable(table, 'createFenceTableSql'))
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(fences)} (
  ordering_key VARBINARY(${MAX_KEY_BYTES}) NOT NULL PRIMARY KEY,
  holder VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NULL,
  held_until DATETIME(6) NOT NULL,
  held_since DATETIME(6) NULL,
  holder_event_id VARBINARY(${MAX_KEY_BYTES}) NULL,
  holder_event_type VARBINARY(255) NULL,
  mark_at DOUBLE NULL,
  mark_type VARBINARY(255) NULL,
  mark_id VARBINARY(${MAX_KEY_BYTES}) NULL,
  fence_token BIGINT NOT NULL DEFAULT 0,
  keep_until DATETIME(6) NOT NULL,
  KEY keep_idx (keep_until),
  KEY held_idx (held_since, ordering_key)
) ENGINE=InnoDB`
}

/** `UTC_TIMESTAMP(6)` plus the milliseconds of the placeholder (sent as whole microseconds). */
export const later = () => 'UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND'
/** Milliseconds as the whole microseconds {@link later} adds. */
export const micros = (ms: number) => Math.round(ms * 1000)
/** Microseconds from now to `column` (negative once past): a BIGINT, which mysql2 answers as a number. */
export const remaining = (column: string) => `TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), ${column})`
/** `column` (a UTC DATETIME) in microseconds since the epoch. */
export const epochMicros = (column: string) => `TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', ${column})`

export interface Statements {
  /** event id, token, lease µs, body digest: a new row; fails with ER_DUP_ENTRY when the event has one. */
  insert: string
  /** token, lease µs, body digest, event id: takes over a row whose lease (or retention) ran out. */
  takeOver: string
  /** event id: `done`, `remaining_us` and `body_digest` of its row, if any. */
  state: string
  /** lease µs, event id, token: no row matched once the lease ran out. */
  extend: string
  /** retention µs, event id, token: no row matched once the lease ran out. */
  complete: string
  /** event id, token. */
  release: string
  /** batch: deletes at most a batch of the oldest rows past their expiry. */
  sweep: string
}

/** The store's statements on `table`. A claim writes its digest; `complete` leaves it, so the done marker keeps it. */
export function statements(table: string): Statements {
  const t = quoteTable(table)
  return {
    insert: `INSERT INTO ${t} (event_id, token, expires_at, body_digest) VALUES (?, ?, ${later()}, ?)`,
    takeOver: `UPDATE ${t} SET token = ?, expires_at = ${later()}, body_digest = ? WHERE event_id = ? AND expires_at <= UTC_TIMESTAMP(6)`,
    state: `SELECT token IS NULL AS done, ${remaining('expires_at')} AS remaining_us, body_digest FROM ${t} WHERE event_id = ?`,
    // A lease that ran out is not the token's any more, even before another claim takes the event.
    extend: `UPDATE ${t} SET expires_at = ${later()} WHERE event_id = ? AND token = ? AND expires_at > UTC_TIMESTAMP(6)`,
    complete: `UPDATE ${t} SET token = NULL, expires_at = ${later()} WHERE event_id = ? AND token = ? AND expires_at > UTC_TIMESTAMP(6)`,
    release: `DELETE FROM ${t} WHERE event_id = ? AND token = ?`,
    sweep: `DELETE FROM ${t} WHERE expires_at < UTC_TIMESTAMP(6) ORDER BY expires_at LIMIT ?`,
  }
}

/** MySQL's and MariaDB's ER_DUP_ENTRY: a row with that key exists. */
export const DUPLICATE_KEY = 1062

/** The error number of a mysql2 error (`errno`), if any. */
export const errnoOf = (error: unknown) => (error as { errno?: unknown } | null | undefined)?.errno

/**
 * How many rows an UPDATE or DELETE matched, whatever the connection's CLIENT_FOUND_ROWS flag (mysql2 sets it by
 * default, so `affectedRows` counts matched rows; without it, only changed ones): read from the server's
 * "Rows matched: N" where it says it.
 */
export function matched(result: unknown): number {
  const header = result as { affectedRows?: number; info?: string }
  const said = /Rows matched: (\d+)/.exec(header.info ?? '')
  return said ? Number(said[1]) : (header.affectedRows ?? 0)
}
