import type { DeadLetterFilter, NormalizedDeadLetterQuery } from '@payhooks/core'
import { checkTable, MAX_KEY_BYTES, quoteTable } from './sql.js'

// Every statement of mysqlDeadLetterStore, for one table. Times are milliseconds since the epoch (BIGINT, the
// receiver's `parkedAt` and `replayedAt`): exact keyset cursors, and no time zone of a session in play. The event id
// and type are VARBINARY, compared and ordered byte for byte; the headers are JSON text (MySQL's JSON type is
// binary, MariaDB's an alias of LONGTEXT, so text reads the same on both).

/**
 * The `CREATE TABLE IF NOT EXISTS` statement of the dead letters' table (what `init()` runs and
 * `sql/003_payhooks_dead_letters.sql` holds for the default name): one row per `event_id`, the exact bytes received,
 * indexed for pages by status (and code, and type) newest first, for the retention sweep and for windows of the
 * events' `created_at`.
 *
 * @example
 * import { createDeadLetterTableSql } from '@payhooks/mysql'
 *
 * await connection.query(createDeadLetterTableSql('billing_dead_letters'))
 */
export function createDeadLetterTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoteTable(checkTable(table, 'createDeadLetterTableSql'))} (
  event_id VARBINARY(${MAX_KEY_BYTES}) NOT NULL PRIMARY KEY,
  event_type VARBINARY(1024) NOT NULL,
  body LONGBLOB NOT NULL,
  headers LONGTEXT CHARACTER SET utf8mb4 NOT NULL,
  code VARCHAR(32) CHARACTER SET ascii NOT NULL,
  reason TEXT CHARACTER SET utf8mb4 NOT NULL,
  created_at BIGINT NULL,
  first_parked_at BIGINT NOT NULL,
  parked_at BIGINT NOT NULL,
  park_count INT NOT NULL,
  status VARCHAR(16) CHARACTER SET ascii NOT NULL,
  replayed_at BIGINT NULL,
  KEY list_idx (status, parked_at, event_id),
  KEY code_idx (status, code, parked_at, event_id),
  KEY type_idx (status, event_type, parked_at, event_id),
  KEY sweep_idx (status, replayed_at),
  KEY created_idx (status, created_at)
) ENGINE=InnoDB`
}

export const DEAD_LETTER_COLUMNS = [
  'event_id',
  'event_type',
  'body',
  'headers',
  'code',
  'reason',
  'created_at',
  'first_parked_at',
  'parked_at',
  'park_count',
  'status',
  'replayed_at',
]
const COLUMNS = DEAD_LETTER_COLUMNS.join(', ')

/** The WHERE clause of `query`, its values pushed on `values`. */
function filterOf(query: DeadLetterFilter & { status: string }, values: unknown[]): string {
  const where: string[] = []
  const add = (condition: string, ...given: unknown[]) => {
    where.push(condition)
    values.push(...given)
  }
  if (query.status !== 'all') add('status = ?', query.status)
  if (query.eventType !== undefined) add('event_type = ?', query.eventType)
  if (query.code !== undefined) add('code = ?', query.code)
  if (query.parkedAfter !== undefined) add('parked_at >= ?', query.parkedAfter.getTime())
  if (query.parkedBefore !== undefined) add('parked_at < ?', query.parkedBefore.getTime())
  if (query.createdAfter !== undefined) add('created_at >= ?', query.createdAfter.getTime())
  if (query.createdBefore !== undefined) add('created_at < ?', query.createdBefore.getTime())
  const { position, order } = query as Partial<NormalizedDeadLetterQuery>
  if (position) {
    const than = order === 'oldest' ? '>' : '<'
    add(
      `(parked_at ${than} ? OR (parked_at = ? AND event_id ${than} CAST(? AS BINARY)))`,
      position.parkedAt,
      position.parkedAt,
      position.eventId,
    )
  }
  return where.length > 0 ? ` WHERE ${where.join(' AND ')}` : ''
}

/** The statements of one dead-letter table. */
export function deadLetterStatements(table: string) {
  const t = quoteTable(table)
  return {
    probe: `SELECT ${COLUMNS} FROM ${t} LIMIT 0`,
    /** event id, event type, body, headers, code, reason, created at, parked at, parked at: a new letter. */
    insert: `INSERT INTO ${t} (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 'parked', NULL)`,
    /**
     * event type, headers, code, reason, created at, parked at, event id, body: a letter parked again with the same
     * bytes (a replayed one, or one of other bytes, is left as it is).
     */
    again: `UPDATE ${t} SET event_type = ?, headers = ?, code = ?, reason = ?, created_at = ?, parked_at = ?,
park_count = park_count + 1 WHERE event_id = ? AND status = 'parked' AND body = ?`,
    get: `SELECT ${COLUMNS} FROM ${t} WHERE event_id = ?`,
    markReplayed: `UPDATE ${t} SET status = 'replayed', replayed_at = ? WHERE event_id = ?`,
    remove: `DELETE FROM ${t} WHERE event_id = ?`,
    /** before (ms), batch. */
    sweep: `DELETE FROM ${t} WHERE status = 'replayed' AND replayed_at < ? ORDER BY replayed_at LIMIT ?`,
    list(query: NormalizedDeadLetterQuery) {
      const values: unknown[] = []
      const filter = filterOf(query, values)
      values.push(query.limit, query.offset)
      const direction = query.order === 'oldest' ? 'ASC' : 'DESC'
      const text = `SELECT ${COLUMNS} FROM ${t}${filter}
ORDER BY parked_at ${direction}, event_id ${direction} LIMIT ? OFFSET ?`
      return { text, values }
    },
    count(query: DeadLetterFilter & { status: NormalizedDeadLetterQuery['status'] }) {
      const values: unknown[] = []
      return { text: `SELECT COUNT(*) AS count FROM ${t}${filterOf(query, values)}`, values }
    },
  }
}
