import { randomBytes } from 'node:crypto'
import { type ClaimResult, DEFAULT_RETENTION_MS, type OrderingPosition, RETRY_WINDOW_MS } from '@payhooks/core'
import { check, nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { UnusableLibraryError } from './binding-checks.js'
import type { Database, Run } from './database.js'
import { fenceTableOf } from './fence-sql.js'
import { postgresFences } from './fences.js'
import { postgresHealth } from './health.js'
import { createOnce, inBatches, startSweeper } from './maintenance.js'
import { alterWithin, buildIndexConcurrently, hasColumns, relationExists, retryInBackground } from './schema-change.js'
import { bodyDigestColumnSql, checkTable, createTableSql, expiryIndexSql, INDEX_DELAY_MS, statements } from './sql.js'
import { runTransaction } from './transaction.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresBinding } from './types.js'

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

/** The binding as the upkeep's {@link Database}: its transactions are the library's. */
function databaseOf<Db>(binding: PostgresBinding<Db>): Database {
  const query = binding.run as Run
  return {
    query,
    transaction: (work) =>
      binding.transaction((db) => work(((text, values = []) => binding.query(db, text, values)) as Run)),
    ...(binding.session
      ? {
          session: (work) =>
            (binding.session as NonNullable<typeof binding.session>)((run) =>
              work(((text, values = []) => run(text, values)) as Run),
            ),
        }
      : {}),
  }
}

/**
 * A dedupe store on PostgreSQL whose handlers write in the transaction of the event's done marker, through the
 * library `binding` reaches it with (see {@link PostgresBinding}): `postgresStore` is this engine bound to `pg`, and
 * `@payhooks/postgres/drizzle`, `/kysely`, `/knex`, `/typeorm` and `/postgres-js` bind it to those libraries. A claim
 * is a committed row with an owner token and a lease (renewed by `extend` outside the transaction); the handlers run
 * with `context.db`, the library's handle of a transaction, and the done marker is written in it, only if the token
 * still holds the claim, before it commits. Same table, options and migrations as `postgresStore`.
 *
 * @example
 * import { bindPostgresStore } from '@payhooks/postgres'
 * import postgres from 'postgres'
 *
 * const sql = postgres(process.env.DATABASE_URL!)
 * const store = bindPostgresStore({
 *   name: 'myStore',
 *   transaction: (work) => sql.begin((tx) => work(tx)) as Promise<never>,
 *   query: async (tx, text, values) => {
 *     const rows = await tx.unsafe(text, values as never[])
 *     return { rows: [...rows], rowCount: rows.count }
 *   },
 *   run: async (text, values) => {
 *     const rows = await sql.unsafe(text, values as never[])
 *     return { rows: [...rows], rowCount: rows.count }
 *   },
 * })
 */
export function bindPostgresStore<Db>(
  binding: PostgresBinding<Db>,
  options: BoundPostgresStoreOptions = {},
): BoundPostgresStore<Db> {
  const where = binding.name
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
  const maxConcurrentEvents =
    options.maxConcurrentEvents === undefined
      ? Math.max(1, (binding.poolSize ?? 10) - 1)
      : positiveInteger(options.maxConcurrentEvents, where, 'maxConcurrentEvents')
  const logger = options.logger ?? console
  const leaseMs = (value: number) => {
    check(value > 0 && Number.isFinite(value), where, 'leaseMs', 'be positive')
    return Math.ceil(value)
  }
  const db = databaseOf(binding)
  const run = binding.run
  // With the body_digest column (see init), claims keep their body's digest; without it, none.
  let digests = true
  let sql = statements(table, digests)
  let sweeper: { stop(): void } | undefined
  let indexer: { stop(): void } | undefined

  /** Whether the table has the body_digest column (read from the catalog: no lock on the table). */
  const hasDigestColumn = () => hasColumns(run, table, 'body_digest')

  // Ordering fences (issue 24), in `<table>_fences`; none when that name would be too long.
  const fenceTable = fenceTableOf(table)
  const lockTimeoutMs = nonNegativeNumber(options.migrationLockTimeoutMs ?? 500, where, 'migrationLockTimeoutMs')
  const fences =
    fenceTable === undefined ? undefined : postgresFences(db, table, fenceTable, createTable, { lockTimeoutMs, logger })

  const sweep = async () => (await inBatches(db, sql.sweep, [], sweepBatch)) + ((await fences?.sweep(sweepBatch)) ?? 0)

  async function release(eventId: string, token: string): Promise<boolean> {
    const fenced = fences?.release(eventId, token)
    return (await (fenced ? run(fenced.text, fenced.values) : run(sql.release, [eventId, token]))).rowCount === 1
  }

  /** The claim's fence: held, or the claim given back when another claim holds the key (or taking it failed). */
  async function enterFence(eventId: string, token: string, position: OrderingPosition, ms: number) {
    let entered: ClaimResult
    try {
      entered = await (fences as NonNullable<typeof fences>).enter(eventId, token, position, ms)
    } catch (error) {
      await run(sql.release, [eventId, token]).catch(() => {})
      throw error
    }
    if (entered.status !== 'claimed') await run(sql.release, [eventId, token])
    return entered
  }

  return {
    retentionMs,
    maxConcurrentEvents,
    ordering: fences !== undefined,
    async init() {
      await binding.check?.()
      // A table made now gets its sweep index at once (it is empty); an earlier release's, built CONCURRENTLY in the
      // background (migration 012), the sweep reading the table meanwhile.
      if (createTable && !(await relationExists(db, table))) {
        await createOnce(db, table, `${createTableSql(table)};\n${expiryIndexSql(table)}`)
      } else if (createTable) {
        indexer ??= retryInBackground(
          async () => {
            await buildIndexConcurrently(db, expiryIndexSql(table))
          },
          {
            what: `${where}: migration 012 (sql/012_payhooks_sweep_indexes.sql) on ${table}`,
            meanwhile: 'the sweep reads the table without its index',
            logger,
            firstDelayMs: INDEX_DELAY_MS,
          },
        )
      }
      // Checked before altering: ALTER TABLE locks the table, waiting on the other instances' transactions.
      let hasColumn = await hasDigestColumn()
      if (!hasColumn && createTable) {
        await alterWithin(db, '004', table, bodyDigestColumnSql(table), lockTimeoutMs)
        hasColumn = true
      }
      if (!hasColumn && digests) {
        ;(logger.warn ?? logger.error).call(
          logger,
          `[payhooks] ${where}: ${table} has no body_digest column (apply sql/004_payhooks_events_body_digest.sql), so copies of a handled event with other bytes are not reported`,
        )
      }
      if (hasColumn !== digests) {
        digests = hasColumn
        sql = statements(table, digests)
      }
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `${where}: sweep of ${table}`)
      }
    },

    async claim(eventId, lease, digest, position): Promise<ClaimResult> {
      const ms = leaseMs(lease)
      // The row may change between the claim and the look at it (released, or its lease ending): try again.
      for (let attempt = 0; attempt < 3; attempt++) {
        const token = newToken()
        const claimed = await run(sql.claim, digests ? [eventId, token, ms, digest ?? null] : [eventId, token, ms])
        if (claimed.rowCount === 1)
          return position && fences ? enterFence(eventId, token, position, ms) : { status: 'claimed', token }
        const { rows } = await run(sql.state, [eventId])
        const row = rows[0] as State | undefined
        if (row && row.remaining_ms > 0) return stateOf(row)
      }
      return { status: 'processing' }
    },

    async extend(eventId, token, lease) {
      const ms = leaseMs(lease)
      const fenced = fences?.extend(eventId, token, ms)
      return (await (fenced ? run(fenced.text, fenced.values) : run(sql.extend, [eventId, token, ms]))).rowCount === 1
    },

    async complete(eventId, token) {
      const fenced = fences?.complete(eventId, token, retentionMs)
      if (!fenced) return (await run(sql.complete, [eventId, token, retentionMs])).rowCount === 1
      try {
        return (await run(fenced.text, fenced.values)).rowCount === 1
      } finally {
        fences?.forget(token)
      }
    },

    release,

    transaction: (eventId, token, work) => {
      const fenced = fences?.complete(eventId, token, retentionMs)
      if (!fenced) return runTransaction(binding, { text: sql.complete, values: [eventId, token, retentionMs] }, work)
      // Rolled back (or failed), the receiver releases the claim, which frees the fence: keep it until then.
      return runTransaction(binding, fenced, work).then((outcome) => {
        if (outcome !== 'rolled_back') fences?.forget(token)
        return outcome
      })
    },

    sweep,

    ...(fences ? { heldKeys: ({ limit }: { limit: number }) => fences.heldKeys(limit) } : {}),

    async health() {
      // The library's object first (ended, destroyed, not initialized): what its check says, with its fix.
      try {
        await binding.check?.()
      } catch (error) {
        // Anything else (PostgreSQL down) is for the checks below to tell.
        if (error instanceof UnusableLibraryError) {
          const [detail, fix] = error.message.split('; it needs ')
          return [{ name: 'postgres', ok: false, detail: detail as string, fix: `give it ${fix ?? 'a live one'}` }]
        }
      }
      // postgresHealth reads through `query` only: the binding's, outside any transaction.
      return postgresHealth(db as unknown as Pool, { name: 'postgres', store: 'events', table, createTable })
    },

    shutdown() {
      fences?.stop()
      sweeper?.stop()
      sweeper = undefined
      indexer?.stop()
      indexer = undefined
    },
  }
}
