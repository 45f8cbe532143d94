import { randomBytes } from 'node:crypto'
import { type ClaimResult, DEFAULT_RETENTION_MS, RETRY_WINDOW_MS } from '@payhooks/core'
import { check, nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'mysql2/promise'
import { mysqlFences } from './fences.js'
import { mysqlHealth } from './health.js'
import { inBatches, startSweeper } from './maintenance.js'
import { checkOpen, checkPool } from './pool-checks.js'
import { runOn } from './run.js'
import { MIGRATIONS, runDdl } from './schema.js'
import { checkTable, DUPLICATE_KEY, errnoOf, MAX_KEY_BYTES, matched, micros, quoteTable, statements } from './sql.js'
import { runTransaction, writeMarker } from './transaction.js'
import type { MysqlStore, MysqlStoreOptions } from './types.js'

const where = 'mysqlStore'

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
function checkKey(key: string, what: string): void {
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) {
    throw new Error(`${where}: ${what} is longer than the ${MAX_KEY_BYTES} bytes of UTF-8 its table keeps`)
  }
}

/**
 * Dedupe store on MySQL 8 or MariaDB 10.6+ (mysql2) whose handlers write in the same transaction as the event's done
 * marker, so a handler's effects and "handled" commit together or not at all: exactly-once effects, even when a
 * process dies between its write and its commit. A claim is a committed row with an owner token and a lease (other
 * deliveries answer 409 meanwhile, and `extend` renews it on another connection of the pool); then the handlers run
 * with `context.db`, a `PoolConnection` checked out of the pool at its first statement, inside `START TRANSACTION`,
 * and the row is marked done by that transaction, only if the token still holds it, before `COMMIT`. Handlers that
 * never use `context.db` hold no connection. It advertises `maxConcurrentEvents` as the pool's `connectionLimit - 1`,
 * so a burst of events leaves the app a connection. Takes your `mysql2/promise` Pool and never ends it.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { mysqlStore } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool({ uri: process.env.MYSQL_URL, connectionLimit: 20, connectTimeout: 2000 })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: mysqlStore(pool) })
 * webhooks.on('transaction_settled', async (event, { db }) => {
 *   await db.query('INSERT INTO settlements (transaction_id, amount) VALUES (?, ?)', [
 *     event.data.transaction_id,
 *     event.data.settlement_amount,
 *   ])
 * })
 */
export function mysqlStore(pool: Pool, options: MysqlStoreOptions = {}): MysqlStore {
  checkPool(pool, where)
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
  const maxConcurrentEvents = Math.max(1, (limit > 0 ? limit : 10) - 1)
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
      checkKey(eventId, 'the event id')
      if (position) checkKey(position.key, 'the ordering key')
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
      const outcome = await runTransaction(pool, markerOf(eventId, token), work)
      // Rolled back, the receiver releases the claim, which frees the fence: keep it until then.
      if (outcome !== 'rolled_back') fences.forget(token)
      return outcome
    },

    sweep,

    heldKeys: ({ limit }: { limit: number }) => fences.heldKeys(limit),

    health: () => mysqlHealth(pool, table, createTable),

    shutdown() {
      sweeper?.stop()
      sweeper = undefined
    },
  }
}
