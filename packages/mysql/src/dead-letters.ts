import {
  type DeadLetter,
  type DeadLetterCode,
  type DeadLetterStore,
  deadLetterCountQuery,
  deadLetterQuery,
  type HealthCheck,
} from '@payhooks/core'
import { check, nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'mysql2/promise'
import { createDeadLetterTableSql, DEAD_LETTER_COLUMNS, deadLetterStatements } from './dead-letter-sql.js'
import { startSweeper } from './maintenance.js'
import { checkOpen, checkPool } from './pool-checks.js'
import { runOn } from './run.js'
import { columnsOf, runDdl } from './schema.js'
import { checkTable, DUPLICATE_KEY, errnoOf, matched } from './sql.js'
import type { MysqlDeadLetterStoreOptions } from './types.js'

const WEEK_MS = 7 * 24 * 60 * 60 * 1000

type Row = Record<string, unknown>
const text = (value: unknown) => (Buffer.isBuffer(value) ? value.toString('utf8') : String(value))
const date = (value: unknown) => (value === null || value === undefined ? undefined : new Date(Number(value)))

function toLetter(row: Row): DeadLetter {
  const body = row.body as Buffer
  return {
    eventId: text(row.event_id),
    eventType: text(row.event_type),
    body: new Uint8Array(body.buffer, body.byteOffset, body.byteLength),
    headers: JSON.parse(text(row.headers)) as Record<string, string>,
    code: text(row.code) as DeadLetterCode,
    reason: text(row.reason),
    createdAt: date(row.created_at),
    parkedAt: date(row.parked_at) as Date,
    firstParkedAt: date(row.first_parked_at) as Date,
    parkCount: Number(row.park_count),
    status: text(row.status) as DeadLetter['status'],
    replayedAt: date(row.replayed_at),
  }
}

/**
 * Dead letters on MySQL (or MariaDB), shared by every receiver instance on the database: one row per `event_id`, the
 * exact bytes received in a `LONGBLOB`. `park` inserts the letter, or parks it again when it is there with the same
 * bytes and still parked (keeping `firstParkedAt`, counting up `parkCount`); a replayed letter, or one of other bytes,
 * is left as it is. `durable`: a receiver answers 200 `parked` once the row is committed. Pages are read by keyset
 * (`after`) on the `(status, parked_at, event_id)` indexes; `count()` counts on them. Replayed letters are kept
 * `replayedRetentionMs`, then swept in batches. Takes your `mysql2/promise` Pool and never ends it.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { mysqlDeadLetterStore, mysqlStore } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL, connectTimeout: 2000 })
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   store: mysqlStore(pool),
 *   deadLetters: mysqlDeadLetterStore(pool),
 * })
 */
export function mysqlDeadLetterStore(
  pool: Pool,
  options: MysqlDeadLetterStoreOptions = {},
): DeadLetterStore & {
  sweep(): Promise<number>
  count(query?: Parameters<typeof deadLetterCountQuery>[0]): Promise<number>
} {
  const where = 'mysqlDeadLetterStore'
  checkPool(pool, where)
  const table = checkTable(options.table ?? 'payhooks_dead_letters', where)
  const createTable = options.createTable ?? true
  const replayedRetentionMs = options.replayedRetentionMs ?? WEEK_MS
  check(
    Number.isSafeInteger(replayedRetentionMs) && replayedRetentionMs > 0,
    where,
    'replayedRetentionMs',
    'be a positive whole number',
  )
  const sweepIntervalMs = nonNegativeNumber(options.sweepIntervalMs ?? 3_600_000, where, 'sweepIntervalMs')
  const sweepBatch = positiveInteger(options.sweepBatch ?? 5000, where, 'sweepBatch')
  const logger = options.logger ?? console
  const sql = deadLetterStatements(table)
  const run = runOn(pool)
  let sweeper: { stop(): void } | undefined

  async function sweep(): Promise<number> {
    const before = Date.now() - replayedRetentionMs
    let total = 0
    for (;;) {
      const deleted = ((await run(sql.sweep, [before, sweepBatch])) as { affectedRows: number }).affectedRows
      total += deleted
      if (deleted < sweepBatch) return total
    }
  }

  const get = async (eventId: string) => {
    const [row] = (await run(sql.get, [eventId])) as Row[]
    return row && toLetter(row)
  }

  return {
    durable: true,
    keysetPaging: true,

    async init() {
      checkOpen(pool, where)
      if (createTable) await runDdl(pool, [createDeadLetterTableSql(table)], 1000)
      else await run(sql.probe)
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `${where}: sweep of ${table}`)
      }
    },

    async park(event) {
      const body = Buffer.from(event.body.buffer, event.body.byteOffset, event.body.byteLength)
      const headers = JSON.stringify(event.headers)
      const created = event.createdAt?.getTime() ?? null
      const parked = event.parkedAt.getTime()
      // Swept between the statements (a replayed letter past its retention), the event is parked anew.
      for (let attempt = 0; attempt < 3; attempt++) {
        try {
          await run(sql.insert, [
            event.eventId,
            event.eventType,
            body,
            headers,
            event.code,
            event.reason,
            created,
            parked,
            parked,
          ])
        } catch (error) {
          if (errnoOf(error) !== DUPLICATE_KEY) throw error
          const values = [event.eventType, headers, event.code, event.reason, created, parked, event.eventId, body]
          matched(await run(sql.again, values))
        }
        const letter = await get(event.eventId)
        if (letter) return letter
      }
      throw new Error(`${where}: the letter of ${event.eventId} vanished while parking`)
    },

    get,

    async list(query) {
      const { text: statement, values } = sql.list(deadLetterQuery(query, `${where}.list`))
      return ((await run(statement, values)) as Row[]).map(toLetter)
    },

    async count(query) {
      const { text: statement, values } = sql.count(deadLetterCountQuery(query, `${where}.count`))
      const [row] = (await run(statement, values)) as Row[]
      return Number(row?.count ?? 0)
    },

    async markReplayed(eventId, at) {
      return matched(await run(sql.markReplayed, [at.getTime(), eventId])) === 1
    },

    async delete(eventId) {
      return matched(await run(sql.remove, [eventId])) === 1
    },

    sweep,

    async health(): Promise<HealthCheck[]> {
      const name = 'dead_letter_mysql'
      try {
        const present = await columnsOf(pool, table)
        const missing = DEAD_LETTER_COLUMNS.filter((column) => !present.has(column))
        if (missing.length === 0) return [{ name, ok: true, detail: '003_payhooks_dead_letters.sql' }]
        const problem = present.size === 0 ? `table ${table} is missing` : `${table} lacks ${missing.join(', ')}`
        if (createTable) return [{ name, ok: true, detail: `${problem}: init() applies 003_payhooks_dead_letters.sql` }]
        return [
          {
            name,
            ok: false,
            detail: `${problem}: parking fails`,
            fix: 'run payhooks migrate --mysql URL, or apply sql/003_payhooks_dead_letters.sql of @payhooks/mysql',
          },
        ]
      } catch {
        return [{ name, ok: false, detail: 'MySQL does not answer: parking fails', fix: 'start MySQL' }]
      }
    },

    shutdown() {
      sweeper?.stop()
      sweeper = undefined
    },
  }
}
