// Every statement of the store, for one table. Times are the database's own (clock_timestamp(), not now(),
// which inside a transaction is its start), so the receivers' clocks play no part.

/** Where `table` is a checked name (letters, digits, `_`, one optional schema): each part double-quoted. */
export function quoteTable(table: string): string {
  return table
    .split('.')
    .map((part) => `"${part}"`)
    .join('.')
}

/** `token` holds the owner's token while the event is claimed and is NULL once it is done. */
export function createTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(table)} (
  event_id text PRIMARY KEY,
  token text,
  expires_at timestamptz NOT NULL
)`
}

const later = (param: string) => `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`

export interface Statements {
  /** $1 event id, $2 token, $3 lease ms: one row when claimed. */
  claim: string
  /** $1 event id: `done` and `remaining_ms` of the row holding it, if any. */
  state: string
  /** $1 event id, $2 token, $3 lease ms. */
  extend: string
  /** $1 event id, $2 token, $3 retention ms. */
  complete: string
  /** $1 event id, $2 token. */
  release: string
  sweep: string
}

export function statements(table: string): Statements {
  const t = quoteTable(table)
  return {
    claim: `INSERT INTO ${t} AS e (event_id, token, expires_at) VALUES ($1, $2, ${later('$3')})
ON CONFLICT (event_id) DO UPDATE SET token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
WHERE e.expires_at <= clock_timestamp()
RETURNING 1`,
    state: `SELECT token IS NULL AS done, extract(epoch FROM expires_at - clock_timestamp())::float8 * 1000 AS remaining_ms
FROM ${t} WHERE event_id = $1`,
    extend: `UPDATE ${t} SET expires_at = ${later('$3')} WHERE event_id = $1 AND token = $2`,
    complete: `UPDATE ${t} SET token = NULL, expires_at = ${later('$3')} WHERE event_id = $1 AND token = $2`,
    release: `DELETE FROM ${t} WHERE event_id = $1 AND token = $2`,
    sweep: `DELETE FROM ${t} WHERE expires_at < clock_timestamp()`,
  }
}
