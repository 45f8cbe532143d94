import { randomBytes } from 'node:crypto'
import { type ClaimResult, DEFAULT_RETENTION_MS, type OrderingPosition, RETRY_WINDOW_MS } from '@payhooks/core'
import { check, nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { fenceTableOf } from './fence-sql.js'
import { postgresFences } from './fences.js'
import { postgresHealth } from './health.js'
import { createOnce, inBatches, startSweeper } from './maintenance.js'
import { alterWithin, buildIndexConcurrently, relationExists, retryInBackground } from './schema-change.js'
import {
  bodyDigestColumnSql,
  checkTable,
  createTableSql,
  expiryIndexSql,
  INDEX_DELAY_MS,
  quoteTable,
  statements,
} from './sql.js'
import { runTransaction } from './transaction.js'
import type { PostgresStore, PostgresStoreOptions } from './types.js'

/** Unique per process (72 random bits) and per claim, without a random draw on the hot path. */
const tokenPrefix = randomBytes(9).toString('base64url')
let tokenCounter = 0
const newToken = () => `${tokenPrefix}.${(++tokenCounter).toString(36)}`

interface State {
  done: boolean
  remaining_ms: number
  body_digest: string | null
}

/** A held row's claim answer: done, or processing with the rest of its lease; with its digest, if it has one. */
function stateOf(row: State): ClaimResult {
  const result: ClaimResult = row.done
    ? { status: 'done' }
    : { status: 'processing', retryAfterMs: Math.ceil(row.remaining_ms) }
  if (row.body_digest !== null) result.digest = row.body_digest
  return result
}

/** Pools already warned about (a store and a dead-letter store, or several receivers, often share one). */
const warnedPools = new WeakSet<Pool>()

/**
 * Without `connectionTimeoutMillis` a checkout waits for ever: on a pool the app shares, the app holding a client
 * while handlers wait for one through `context.db` and `pool.query` can wait on each other until every deadline.
 */
function warnWithoutConnectionTimeout(pool: Pool, logger: NonNullable<PostgresStoreOptions['logger']>): void {
  if (warnedPools.has(pool) || (pool.options?.connectionTimeoutMillis ?? 0) > 0) return
  warnedPools.add(pool)
  ;(logger.warn ?? logger.error).call(
    logger,
    '[payhooks] postgresStore: the pool has no connectionTimeoutMillis, so waiting for a client never ends: on a pool the app shares, a handler using both context.db and the pool can deadlock with the app holding a client, and a stuck database holds deliveries until their deadline. Fix: new pg.Pool({ ..., connectionTimeoutMillis: 2000 }) (well below deadlineMs).',
  )
}

function leaseMs(value: number): number {
  check(value > 0 && Number.isFinite(value), 'postgresStore', 'leaseMs', 'be positive')
  return Math.ceil(value)
}

/**
 * Dedupe store on PostgreSQL (node-postgres) whose handlers write in the same transaction as the event's done
 * marker, so a handler's effects and "handled" commit together or not at all: exactly-once effects, even when a
 * process dies between its write and its commit. A claim is a committed row with an owner token and a lease
 * (other deliveries answer 409 meanwhile, and `extend` renews it on another connection of the pool); then the
 * handlers run with `context.db`, a client checked out of the pool at its first query, inside `BEGIN`, and the row
 * is marked done by that transaction, only if the token still holds it, before `COMMIT`. Handlers that never use
 * `context.db` make it a plain dedupe store: no client is held while they run, no transaction is opened. It
 * advertises `maxConcurrentEvents` as the pool's `max - 1` (the receiver's default), so a burst of events leaves
 * the app a client. Takes your `pg.Pool` and never ends it.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { postgresStore } from '@payhooks/postgres'
 * import pg from 'pg'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 2000 })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: postgresStore(pool) })
 * webhooks.on('transaction_settled', async (event, { db }) => {
 *   await db.query('INSERT INTO settlements (transaction_id, amount) VALUES ($1, $2)', [
 *     event.data.transaction_id,
 *     event.data.settlement_amount,
 *   ])
 * })
 */
export function postgresStore(pool: Pool, options: PostgresStoreOptions = {}): PostgresStore {
  const where = 'postgresStore'
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
  const logger = options.logger ?? console
  warnWithoutConnectionTimeout(pool, logger)
  // With the body_digest column (see init), claims keep their body's digest; without it, none.
  let digests = true
  let sql = statements(table, digests)
  let sweeper: { stop(): void } | undefined
  let indexer: { stop(): void } | undefined

  /** Whether the table has the body_digest column (false when the query fails on it: 42703, undefined column). */
  const hasDigestColumn = async () => {
    try {
      await pool.query(`SELECT body_digest FROM ${quoteTable(table)} LIMIT 0`)
      return true
    } catch (error) {
      if ((error as { code?: unknown }).code === '42703') return false
      throw error
    }
  }

  // Ordering fences (issue 24), in `<table>_fences`; none when that name would be too long.
  const fenceTable = fenceTableOf(table)
  const lockTimeoutMs = nonNegativeNumber(options.migrationLockTimeoutMs ?? 500, where, 'migrationLockTimeoutMs')
  const fences =
    fenceTable === undefined
      ? undefined
      : postgresFences(pool, table, fenceTable, createTable, { lockTimeoutMs, logger })

  const sweep = async () =>
    (await inBatches(pool, sql.sweep, [], sweepBatch)) + ((await fences?.sweep(sweepBatch)) ?? 0)

  async function release(eventId: string, token: string): Promise<boolean> {
    const fenced = fences?.release(eventId, token)
    return (await (fenced ? pool.query(fenced) : pool.query(sql.release, [eventId, token]))).rowCount === 1
  }

  /** The claim's fence: held, or the claim given back when another claim holds the key (or taking it failed). */
  async function enterFence(eventId: string, token: string, position: OrderingPosition, ms: number) {
    let entered: ClaimResult
    try {
      entered = await (fences as NonNullable<typeof fences>).enter(eventId, token, position, ms)
    } catch (error) {
      await pool.query(sql.release, [eventId, token]).catch(() => {})
      throw error
    }
    if (entered.status !== 'claimed') await pool.query(sql.release, [eventId, token])
    return entered
  }

  return {
    retentionMs,
    maxConcurrentEvents: Math.max(1, (pool.options?.max ?? 10) - 1),
    ordering: fences !== undefined,
    async init() {
      // A table made now gets its sweep index at once (it is empty); an earlier release's, built CONCURRENTLY in the
      // background (migration 012), the sweep reading the table meanwhile.
      if (createTable && !(await relationExists(pool, table))) {
        await createOnce(pool, table, `${createTableSql(table)};\n${expiryIndexSql(table)}`)
      } else if (createTable) {
        indexer ??= retryInBackground(
          async () => {
            await buildIndexConcurrently(pool, expiryIndexSql(table))
          },
          {
            what: `postgresStore: migration 012 (sql/012_payhooks_sweep_indexes.sql) on ${table}`,
            meanwhile: 'the sweep reads the table without its index',
            logger,
            firstDelayMs: INDEX_DELAY_MS,
          },
        )
      }
      // Checked before altering: ALTER TABLE locks the table, waiting on the other instances' transactions.
      let hasColumn = await hasDigestColumn()
      if (!hasColumn && createTable) {
        await alterWithin(pool, '004', table, bodyDigestColumnSql(table), lockTimeoutMs)
        hasColumn = true
      }
      if (!hasColumn && digests) {
        ;(logger.warn ?? logger.error).call(
          logger,
          `[payhooks] postgresStore: ${table} has no body_digest column (apply sql/004_payhooks_events_body_digest.sql), so copies of a handled event with other bytes are not reported`,
        )
      }
      if (hasColumn !== digests) {
        digests = hasColumn
        sql = statements(table, digests)
      }
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `postgresStore: sweep of ${table}`)
      }
    },

    async claim(eventId, lease, digest, position): Promise<ClaimResult> {
      const ms = leaseMs(lease)
      // The row may change between the claim and the look at it (released, or its lease ending): try again.
      for (let attempt = 0; attempt < 3; attempt++) {
        const token = newToken()
        const claimed = await pool.query(
          sql.claim,
          digests ? [eventId, token, ms, digest ?? null] : [eventId, token, ms],
        )
        if (claimed.rowCount === 1)
          return position && fences ? enterFence(eventId, token, position, ms) : { status: 'claimed', token }
        const { rows } = await pool.query<State>(sql.state, [eventId])
        const row = rows[0]
        if (row && row.remaining_ms > 0) return stateOf(row)
      }
      return { status: 'processing' }
    },

    async extend(eventId, token, lease) {
      const ms = leaseMs(lease)
      const fenced = fences?.extend(eventId, token, ms)
      return (await (fenced ? pool.query(fenced) : pool.query(sql.extend, [eventId, token, ms]))).rowCount === 1
    },

    async complete(eventId, token) {
      const fenced = fences?.complete(eventId, token, retentionMs)
      if (!fenced) return (await pool.query(sql.complete, [eventId, token, retentionMs])).rowCount === 1
      try {
        return (await pool.query(fenced)).rowCount === 1
      } finally {
        fences?.forget(token)
      }
    },

    release,

    transaction: (eventId, token, work) => {
      const fenced = fences?.complete(eventId, token, retentionMs)
      if (!fenced) return runTransaction(pool, sql.complete, [eventId, token, retentionMs], work)
      // Rolled back (or failed), the receiver releases the claim, which frees the fence: keep it until then.
      return runTransaction(pool, fenced.text, fenced.values, work).then((outcome) => {
        if (outcome !== 'rolled_back') fences?.forget(token)
        return outcome
      })
    },

    sweep,

    ...(fences ? { heldKeys: ({ limit }: { limit: number }) => fences.heldKeys(limit) } : {}),

    health: () => postgresHealth(pool, { name: 'postgres', store: 'events', table, createTable }),

    shutdown() {
      fences?.stop()
      sweeper?.stop()
      sweeper = undefined
      indexer?.stop()
      indexer = undefined
    },
  }
}
