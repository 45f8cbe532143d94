import type { Pool } from 'mysql2/promise'
import { createFenceTableSql, createTableSql, fenceTableOf } from './sql.js'

/** MySQL's and MariaDB's ER_LOCK_WAIT_TIMEOUT: a lock (here a metadata lock) not granted in time. */
export const LOCK_WAIT_TIMEOUT = 1205

/** One migration of the store's schema: the file of `sql/` holding it for the default table, and what it makes. */
export interface Migration {
  number: string
  file: string
  /** The table it makes or changes: `<table><suffix>`. */
  suffix: string
  columns: string[]
  /** Its statements for the store table `table`. */
  ddl(table: string): string[]
}

export const MIGRATIONS: Migration[] = [
  {
    number: '001',
    file: '001_payhooks_events.sql',
    suffix: '',
    columns: ['event_id', 'token', 'expires_at', 'body_digest'],
    ddl: (table) => [createTableSql(table)],
  },
  {
    number: '002',
    file: '002_payhooks_events_fences.sql',
    suffix: '_fences',
    columns: [
      'ordering_key',
      'holder',
      'held_until',
      'held_since',
      'holder_event_id',
      'holder_event_type',
      'mark_at',
      'mark_type',
      'mark_id',
      'fence_token',
      'keep_until',
    ],
    ddl: (table) => [createFenceTableSql(table)],
  },
]

/** The whole seconds of `lock_wait_timeout` for `ms` (MySQL takes seconds; at least 1). */
export const lockWaitSeconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000))

/**
 * Runs `ddl` on one connection under a short `lock_wait_timeout` (restored afterwards): a DDL waiting for a metadata
 * lock behind a long transaction queues every statement on its table behind it, so it gives up (ER_LOCK_WAIT_TIMEOUT)
 * rather than stall deliveries. ALTERs name their algorithm (INSTANT or INPLACE, LOCK=NONE) in their text.
 */
export async function runDdl(pool: Pool, ddl: string[], lockTimeoutMs: number): Promise<void> {
  const connection = await pool.getConnection()
  try {
    const [rows] = await connection.query('SELECT @@SESSION.lock_wait_timeout AS wait')
    const before = Number((rows as { wait: number }[])[0]?.wait ?? 31536000)
    await connection.query(`SET SESSION lock_wait_timeout = ${lockWaitSeconds(lockTimeoutMs)}`)
    try {
      for (const statement of ddl) await connection.query(statement)
    } finally {
      await connection.query(`SET SESSION lock_wait_timeout = ${before}`)
    }
  } finally {
    connection.release()
  }
}

/** The columns of `table` (in the connection's database unless qualified): none when it is missing. */
export async function columnsOf(pool: Pool, table: string): Promise<Set<string>> {
  const [schema, name] = table.includes('.') ? (table.split('.') as [string, string]) : [undefined, table]
  const [rows] = await pool.query(
    `SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ${schema === undefined ? 'DATABASE()' : '?'} AND TABLE_NAME = ?`,
    schema === undefined ? [name] : [schema, name],
  )
  return new Set((rows as { name: string }[]).map((row) => row.name.toLowerCase()))
}

/** The relation a migration makes for the store table `table`. */
export const relationOf = (table: string, migration: Migration) =>
  migration.suffix === '_fences' ? fenceTableOf(table) : `${table}${migration.suffix}`
