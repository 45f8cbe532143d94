import { randomBytes } from 'node:crypto'
import { type ClaimResult, DEFAULT_RETENTION_MS, RETRY_WINDOW_MS, type TransactionOutcome } from '@payhooks/core'
import { check, nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import { mysqlFences } from './fences.js'
import { mysqlHealth } from './health.js'
import { inBatches, startSweeper } from './maintenance.js'
import { checkOpen } from './pool-checks.js'
import { runOn } from './run.js'
import { MIGRATIONS, runDdl } from './schema.js'
import { checkTable, DUPLICATE_KEY, errnoOf, MAX_KEY_BYTES, matched, micros, quoteTable, statements } from './sql.js'
import { type Marker, runBoundTransaction, writeMarker } from './transaction.js'
import type { BoundMysqlHandlerContext, BoundMysqlStore, BoundMysqlStoreOptions, MysqlBinding } from './types.js'

/** mysqlStore's own flow, whose transaction opens at context.db's first statement. */
interface Lazy<Db> {
  lazy?: (
    marker: Marker,
    work: (context: BoundMysqlHandlerContext<Db>) => Promise<boolean>,
  ) => Promise<TransactionOutcome>
}

/** Unique per process (72 random bits) and per claim, without a random draw on the hot path. */
const tokenPrefix = randomBytes(9).toString('base64url')
let tokenCounter = 0
const newToken = () => `${tokenPrefix}.${(++tokenCounter).toString(36)}`

interface State {
  done: number
  remaining_us: number
  body_digest: string | null
}

/** A held row's claim answer: done, or processing with the rest of its lease; with its digest, if it has one. */
function stateOf(row: State): ClaimResult {
  const result: ClaimResult =
    Number(row.done) === 1
      ? { status: 'done' }
      : { status: 'processing', retryAfterMs: Math.ceil(Number(row.remaining_us) / 1000) }
  if (row.body_digest !== null) result.digest = row.body_digest
  return result
}

/** Refuses a key the tables cannot keep, with a message naming the limit rather than MySQL's "Data too long". */
function checkKey(key: string, what: string, where: string): void {
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new Error(`${where}: ${what} is longer than the ${MAX_KEY_BYTES} bytes of UTF-8 its table keeps`)
  }
}

/**
 * The store's engine on MySQL or MariaDB, bound to the library `binding` reaches it with (see {@link MysqlBinding}):
 * `mysqlStore` is this engine on a mysql2 pool, and `@payhooks/mysql/drizzle`, `/kysely`, `/knex`, `/typeorm` and
 * `/sequelize` bind it to those libraries. Claims, renewals and upkeep go to `binding.pool` outside any transaction;
 * the handlers run inside `binding.transaction`, with the library's handle as `context.db`, and the done marker is
 * written through `binding.query` on that handle before the library commits.
 *
 * @example
 * import { bindMysqlStore } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL })
 * const store = bindMysqlStore({
 *   name: 'myStore',
 *   pool,
 *   transaction: async (work) => {
 *     const connection = await pool.getConnection()
 *     try {
 *       await connection.beginTransaction()
 *       const result = await work(connection)
 *       await connection.commit()
 *       return result
 *     } catch (error) {
 *       await connection.rollback()
 *       throw error
 *     } finally {
 *       connection.release()
 *     }
 *   },
 *   query: async (connection, text, values) => (await connection.query(text, values))[0],
 * })
 */
export function bindMysqlStore<Db>(
  binding: MysqlBinding<Db> & Lazy<Db>,
  options: BoundMysqlStoreOptions = {},
): BoundMysqlStore<Db> {
  const where = binding.name
  const pool = binding.pool
  const table = checkTable(options.table ?? 'payhooks_events', where)
  const retentionMs = options.retentionMs ?? DEFAULT_RETENTION_MS
  check(
    Number.isSafeInteger(retentionMs) && retentionMs >= RETRY_WINDOW_MS,
    where,
    'retentionMs',
    'be a whole number covering the 72-hour retry window',
  )
  const createTable = options.createTable ?? true
  const sweepIntervalMs = nonNegativeNumber(options.sweepIntervalMs ?? 3_600_000, where, 'sweepIntervalMs')
  const sweepBatch = positiveInteger(options.sweepBatch ?? 5000, where, 'sweepBatch')
  const lockTimeoutMs = nonNegativeNumber(options.migrationLockTimeoutMs ?? 1000, where, 'migrationLockTimeoutMs')
  const logger = options.logger ?? console
  const limit = (pool.pool as unknown as { config?: { connectionLimit?: number } }).config?.connectionLimit ?? 10
  const maxConcurrentEvents =
    options.maxConcurrentEvents === undefined
      ? Math.max(1, (limit > 0 ? limit : 10) - 1)
      : positiveInteger(options.maxConcurrentEvents, where, 'maxConcurrentEvents')
  const leaseMs = (value: number) => {
    check(value > 0 && Number.isFinite(value), where, 'leaseMs', 'be positive')
    return Math.ceil(value)
  }
  const run = runOn(pool)
  const sql = statements(table)
  const fences = mysqlFences(run, table)
  let sweeper: { stop(): void } | undefined

  const sweep = async () =>
    (await inBatches(pool, sql.sweep, sweepBatch)) + (await inBatches(pool, fences.sql.sweep, sweepBatch))

  const markerOf = (eventId: string, token: string) => {
    const position = fences.positionOf(token)
    return {
      eventId,
      token,
      retentionMs,
      complete: sql.complete,
      ...(position ? { fence: { fences, position } } : {}),
    }
  }

  async function release(eventId: string, token: string): Promise<boolean> {
    await fences.release(token)
    return matched(await run(sql.release, [eventId, token])) === 1
  }

  return {
    retentionMs,
    maxConcurrentEvents,
    ordering: true,

    async init() {
      await binding.check?.()
      checkOpen(pool, where)
      if (createTable) {
        await runDdl(
          pool,
          MIGRATIONS.flatMap((migration) => migration.ddl(table)),
          lockTimeoutMs,
        )
      } else {
        // Only read: a missing table or column is said now, not at the first event.
        await run(`SELECT event_id, token, expires_at, body_digest FROM ${quoteTable(table)} LIMIT 0`)
      }
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `${where}: sweep of ${table}`)
      }
    },

    async claim(eventId, lease, digest, position): Promise<ClaimResult> {
      const us = micros(leaseMs(lease))
      checkKey(eventId, 'the event id', where)
      if (position) checkKey(position.key, 'the ordering key', where)
      // The row may change between the claim and the look at it (released, or its lease ending): try again.
      for (let attempt = 0; attempt < 3; attempt++) {
        const token = newToken()
        let claimed: boolean
        try {
          await run(sql.insert, [eventId, token, us, digest ?? null])
          claimed = true
        } catch (error) {
          if (errnoOf(error) !== DUPLICATE_KEY) throw error
          claimed = matched(await run(sql.takeOver, [token, us, digest ?? null, eventId])) === 1
        }
        if (claimed) {
          if (!position) return { status: 'claimed', token }
          let entered: ClaimResult
          try {
            entered = await fences.enter(eventId, token, position, leaseMs(lease))
          } catch (error) {
            await run(sql.release, [eventId, token]).catch(() => {})
            throw error
          }
          if (entered.status !== 'claimed') await run(sql.release, [eventId, token])
          return entered
        }
        const [row] = (await run(sql.state, [eventId])) as State[]
        if (row && Number(row.remaining_us) > 0) return stateOf(row)
      }
      return { status: 'processing' }
    },

    async extend(eventId, token, lease) {
      const us = micros(leaseMs(lease))
      const position = fences.positionOf(token)
      if (!position) return matched(await run(sql.extend, [us, eventId, token])) === 1
      return matched(await run(fences.sql.extend, [position.key, token, us, us, us, eventId, token])) > 0
    },

    async complete(eventId, token) {
      const marker = markerOf(eventId, token)
      if (!marker.fence) return matched(await run(sql.complete, [micros(retentionMs), eventId, token])) === 1
      const connection = await pool.getConnection()
      let broken = false
      try {
        const tx = runOn(connection)
        await tx('START TRANSACTION')
        const done = await writeMarker(tx, marker)
        await tx(done ? 'COMMIT' : 'ROLLBACK')
        return done
      } catch (error) {
        broken = true
        throw error
      } finally {
        fences.forget(token)
        if (broken) connection.destroy()
        else connection.release()
      }
    },

    release,

    transaction: async (eventId, token, work) => {
      const marker = markerOf(eventId, token)
      const outcome = await (binding.lazy ? binding.lazy(marker, work) : runBoundTransaction(binding, marker, work))
      // Rolled back, the receiver releases the claim, which frees the fence: keep it until then.
      if (outcome !== 'rolled_back') fences.forget(token)
      return outcome
    },

    sweep,

    heldKeys: ({ limit }: { limit: number }) => fences.heldKeys(limit),

    async health() {
      try {
        await binding.check?.()
      } catch (error) {
        const detail = error instanceof Error ? error.message : String(error)
        return [{ name: 'mysql', ok: false, detail: detail.split('\n')[0] as string, fix: 'give the store a live one' }]
      }
      return mysqlHealth(pool, table, createTable)
    },

    shutdown() {
      sweeper?.stop()
      sweeper = undefined
    },
  }
}
