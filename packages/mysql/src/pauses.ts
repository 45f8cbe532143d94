import type { HealthCheck, Pause, PauseStore } from '@payhooks/core'
import { check } from '@payhooks/core/validations'
import type { Pool } from 'mysql2/promise'
import { createPauseTableSql, pauseStatements } from './pause-sql.js'
import { checkOpen, checkPool } from './pool-checks.js'
import { runOn } from './run.js'
import { columnsOf, runDdl } from './schema.js'
import { checkTable, matched } from './sql.js'
import type { MysqlPauseStoreOptions } from './types.js'

type Row = Record<string, unknown>
const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))

/**
 * The pauses of a receiver fleet in a MySQL or MariaDB table, for `createWebhooks({ pauses })`: a row per paused
 * type, read whole by every instance every `refreshMs` (one small `SELECT`; a pause reaches each within about a
 * second, and the hot path never waits on the database). The table is created on first use unless `createTable` is
 * false (then run {@link createPauseTableSql} as a migration).
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { mysqlDeadLetterStore, mysqlPauseStore, mysqlStore } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL })
 * const webhooks = createWebhooks({
 *   secret,
 *   store: mysqlStore(pool),
 *   deadLetters: mysqlDeadLetterStore(pool),
 *   pauses: mysqlPauseStore(pool),
 * })
 */
export function mysqlPauseStore(pool: Pool, options: MysqlPauseStoreOptions = {}): PauseStore {
  const where = 'mysqlPauseStore'
  checkPool(pool, where)
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
  const run = runOn(pool)
  return {
    refreshMs,
    async init() {
      checkOpen(pool, where)
      if (createTable) await runDdl(pool, [createPauseTableSql(table)], 1000)
    },
    async pause(pause) {
      await run(sql.pause, [pause.eventType, pause.reason, pause.since.getTime(), pause.by ?? null])
    },
    async resume(eventType) {
      return matched(await run(sql.resume, [eventType])) > 0
    },
    async list() {
      const rows = (await run(sql.list)) as Row[]
      return rows.map((row) => {
        const pause: Pause = {
          eventType: text(row.event_type),
          reason: text(row.reason),
          since: new Date(Number(row.since)),
        }
        if (row.paused_by !== null && row.paused_by !== undefined) pause.by = text(row.paused_by)
        return pause
      })
    },
    async health(): Promise<HealthCheck[]> {
      const name = 'pause_mysql'
      try {
        const present = await columnsOf(pool, table)
        if (present.size > 0) return [{ name, ok: true }]
        if (createTable) return [{ name, ok: true, detail: `table ${table} is missing: init() creates it` }]
        return [
          {
            name,
            ok: false,
            detail: `table ${table} is missing: pauses cannot be read, and the last read stay in force`,
            fix: `create it: createPauseTableSql('${table}') of @payhooks/mysql`,
          },
        ]
      } catch {
        return [{ name, ok: false, detail: 'MySQL did not answer', fix: 'check the pool and the server' }]
      }
    },
  }
}
