import type { Pause, PauseStore } from '@payhooks/core'
import { check } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { postgresHealth } from './health.js'
import { createOnce } from './maintenance.js'
import { createPauseTableSql, pauseStatements } from './pause-sql.js'
import { relationExists } from './schema-change.js'
import { checkTable } from './sql.js'
import type { PostgresPauseStoreOptions } from './types.js'

interface PauseRow {
  event_type: string
  reason: string
  since: Date
  paused_by: string | null
}

/** PostgreSQL text cannot hold NUL. */
const text = (value: string) => value.replaceAll('\u0000', '\uFFFD')

/**
 * The pauses of a receiver fleet in a PostgreSQL table, for `createWebhooks({ pauses })`: a row per paused type,
 * read whole by every instance every `refreshMs` (one small `SELECT`; a pause reaches each within about a second,
 * and the hot path never waits on the database). The table is created on first use unless `createTable` is false
 * (then run `sql/016_payhooks_pauses.sql`, or `payhooks migrate`, as a migration).
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { postgresDeadLetterStore, postgresPauseStore, postgresStore } from '@payhooks/postgres'
 * import pg from 'pg'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * const webhooks = createWebhooks({
 *   secret,
 *   store: postgresStore(pool),
 *   deadLetters: postgresDeadLetterStore(pool),
 *   pauses: postgresPauseStore(pool),
 * })
 */
export function postgresPauseStore(pool: Pool, options: PostgresPauseStoreOptions = {}): PauseStore {
  const where = 'postgresPauseStore'
  const table = checkTable(options.table ?? 'payhooks_pauses', where)
  const createTable = options.createTable ?? true
  const refreshMs = options.refreshMs ?? 1000
  check(
    typeof refreshMs === 'number' && refreshMs >= 10 && refreshMs <= 60_000,
    where,
    'refreshMs',
    'be a number of milliseconds from 10 to 60000',
    RangeError,
  )
  const sql = pauseStatements(table)
  return {
    refreshMs,
    async init() {
      if (createTable && !(await relationExists(pool, table))) await createOnce(pool, table, createPauseTableSql(table))
    },
    async pause(pause) {
      await pool.query(sql.pause, [
        text(pause.eventType),
        text(pause.reason),
        pause.since,
        pause.by === undefined ? null : text(pause.by),
      ])
    },
    async resume(eventType) {
      return ((await pool.query(sql.resume, [eventType])).rowCount ?? 0) > 0
    },
    async list() {
      const { rows } = await pool.query<PauseRow>(sql.list)
      return rows.map((row) => {
        const pause: Pause = { eventType: row.event_type, reason: row.reason, since: new Date(row.since) }
        if (row.paused_by !== null) pause.by = row.paused_by
        return pause
      })
    },
    health: () => postgresHealth(pool, { name: 'pause_postgres', store: 'pauses', table, createTable }),
  }
}
