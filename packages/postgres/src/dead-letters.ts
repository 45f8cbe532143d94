import { type DeadLetter, deadLetterCountQuery, deadLetterQuery } from '@payhooks/core'
import { check, nonNegativeNumber, positiveInteger } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { createDeadLetterCountsSql, fillDeadLetterCounts, hasCounts } from './dead-letter-counts.js'
import {
  createDeadLetterCountIndexesSql,
  createDeadLetterCreatedIndexSql,
  createDeadLetterTableSql,
  type DeadLetterRow,
  deadLetterStatements,
  deadLetterSweepIndexSql,
  widenCodeSql,
  widenDeadLetterCodeSql,
} from './dead-letter-sql.js'
import { postgresHealth } from './health.js'
import { createOnce, inBatches, startSweeper } from './maintenance.js'
import { alterWithin, buildIndexConcurrently, relationExists, retryInBackground } from './schema-change.js'
import { checkTable } from './sql.js'
import type { PostgresDeadLetterStore, PostgresDeadLetterStoreOptions } from './types.js'

const WEEK_MS = 7 * 24 * 60 * 60 * 1000

function toLetter(row: DeadLetterRow): DeadLetter {
  return {
    eventId: row.event_id,
    eventType: row.event_type,
    body: new Uint8Array(row.body),
    headers: row.headers,
    code: row.code,
    reason: row.reason,
    createdAt: row.created_at ?? undefined,
    parkedAt: row.parked_at,
    firstParkedAt: row.first_parked_at,
    parkCount: row.park_count,
    status: row.status,
    replayedAt: row.replayed_at ?? undefined,
  }
}

/**
 * Dead letters on PostgreSQL (node-postgres), shared by every receiver instance on the database: one row per
 * `event_id` in one table, the exact bytes received in a `bytea` column, the headers as `jsonb`. `park` is one
 * atomic `INSERT ... ON CONFLICT (event_id) DO UPDATE` (a letter parked again with the same bytes keeps
 * `firstParkedAt` and counts up `parkCount`; a replayed one, or one of other bytes, is left as it is); `list` one indexed `SELECT ... ORDER BY parked_at DESC, event_id DESC`.
 * `durable`, so a receiver answers 200 `parked` once the row is committed. Replayed letters are kept
 * `replayedRetentionMs`, then swept; parked letters are kept until replayed.
 *
 * Takes your `pg.Pool` and never ends it. Calls reject when PostgreSQL is down or slow (set the pool's
 * `connectionTimeoutMillis` and `query_timeout`): parking then fails, and the delivery is answered non-2XX as
 * without dead letters.
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
 * import pg from 'pg'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, connectionTimeoutMillis: 2000 })
 * const webhooks = createWebhooks({
 *   secret: process.env.WEBHOOK_SECRET!,
 *   store: postgresStore(pool),
 *   deadLetters: postgresDeadLetterStore(pool),
 * })
 */
export function postgresDeadLetterStore(
  pool: Pool,
  options: PostgresDeadLetterStoreOptions = {},
): PostgresDeadLetterStore {
  const where = 'postgresDeadLetterStore'
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
  const lockTimeoutMs = nonNegativeNumber(options.migrationLockTimeoutMs ?? 500, where, 'migrationLockTimeoutMs')
  const logger = options.logger ?? console
  const sql = deadLetterStatements(table)
  let sweeper: { stop(): void } | undefined
  let indexer: { stop(): void } | undefined
  /** Whether the table has migration 010's counts (filled or being filled): count() then reads them. */
  let counted = false

  const sweep = () => inBatches(pool, sql.sweep, [replayedRetentionMs], sweepBatch)

  /**
   * Migrations 015, 010, 008 and 014 on an earlier release's table: the code check widened to `paused` and the
   * counts' triggers, each under lock_timeout, then the fill, then the indexes.
   */
  const upgrade = async () => {
    await alterWithin(pool, '015', table, widenDeadLetterCodeSql(table), lockTimeoutMs)
    if (!(await hasCounts(pool, table))) {
      await alterWithin(pool, '010', table, createDeadLetterCountsSql(table), lockTimeoutMs)
    }
    counted = true
    await fillDeadLetterCounts(pool, table)
    for (const statement of [
      ...createDeadLetterCountIndexesSql(table).split(';\n'),
      deadLetterSweepIndexSql(table),
      createDeadLetterCreatedIndexSql(table),
    ]) {
      await buildIndexConcurrently(pool, statement)
    }
  }

  return {
    durable: true,
    keysetPaging: true,

    async init() {
      if (createTable && !(await relationExists(pool, table))) {
        // A new table, created with its indexes (empty, so built at once); instances starting together take turns.
        await createOnce(
          pool,
          table,
          [
            createDeadLetterTableSql(table),
            widenDeadLetterCodeSql(table),
            createDeadLetterCountIndexesSql(table),
            deadLetterSweepIndexSql(table),
            createDeadLetterCreatedIndexSql(table),
            createDeadLetterCountsSql(table, true),
          ].join(';\n'),
        )
        counted = true
      } else if (createTable) {
        // A table of an earlier release: widened only when it must be; migration 010's counts (their triggers under
        // a short lock_timeout, then filled from one snapshot) and the indexes of 008, 010 and 014 built CONCURRENTLY in
        // the background, so neither init() nor a park waits behind a build over a large table or behind an open
        // transaction (counts and pages read the table meanwhile).
        // 003 at once (stale events need it); 015 in the background: until then a paused type's deliveries are
        // answered 503 paused instead of parked.
        await createOnce(
          pool,
          table,
          widenCodeSql(table, ['schema_mismatch', 'handler_failed', 'stale_event'], 'stale_event'),
        )
        indexer ??= retryInBackground(upgrade, {
          what: `migrations 015, 010, 008 and 014 (sql/015_payhooks_dead_letters_paused.sql, sql/010_payhooks_dead_letters_kept_counts.sql, sql/008_payhooks_dead_letters_counts.sql, sql/014_payhooks_dead_letters_created.sql) on ${table}`,
          meanwhile:
            'dead-letter counts and pages read the table without their indexes or kept counts; a paused type is answered 503 paused',
          logger,
        })
      } else {
        await pool.query(sql.probe)
        counted = await hasCounts(pool, table)
      }
      if (sweepIntervalMs > 0 && sweeper === undefined) {
        sweeper = startSweeper(sweep, sweepIntervalMs, logger, `${where}: sweep of ${table}`)
      }
    },

    async park(event) {
      const values = [
        event.eventId,
        event.eventType,
        Buffer.from(event.body.buffer, event.body.byteOffset, event.body.byteLength),
        JSON.stringify(event.headers),
        event.code,
        // PostgreSQL text cannot hold NUL, which a handler's error message might: the letter matters more.
        event.reason.replaceAll('\u0000', '\uFFFD'),
        event.createdAt ?? null,
        event.parkedAt,
      ]
      // The row left as it is (replayed, or other bytes) is read; swept in between (a replayed letter past its
      // retention), the event is parked anew.
      for (let attempt = 0; attempt < 3; attempt++) {
        const parked = await pool.query<DeadLetterRow>(sql.park, values)
        const row = parked.rows[0] ?? (await pool.query<DeadLetterRow>(sql.get, [event.eventId])).rows[0]
        if (row) return toLetter(row)
      }
      throw new Error(`${where}: the letter of ${event.eventId} vanished while parking`)
    },

    async get(eventId) {
      const { rows } = await pool.query<DeadLetterRow>(sql.get, [eventId])
      return rows[0] && toLetter(rows[0])
    },

    async list(query) {
      const { text, values } = sql.list(deadLetterQuery(query, `${where}.list`))
      const { rows } = await pool.query<DeadLetterRow>(text, values)
      return rows.map(toLetter)
    },

    async count(query) {
      const { text, values } = sql.count(deadLetterCountQuery(query, `${where}.count`), counted)
      const { rows } = await pool.query<{ count: number }>(text, values)
      return rows[0]?.count ?? 0
    },

    async markReplayed(eventId, at) {
      return (await pool.query(sql.markReplayed, [eventId, at])).rowCount === 1
    },

    async delete(eventId) {
      return (await pool.query(sql.remove, [eventId])).rowCount === 1
    },

    sweep,

    health: () => postgresHealth(pool, { name: 'dead_letter_postgres', store: 'dead_letters', table, createTable }),

    shutdown() {
      sweeper?.stop()
      sweeper = undefined
      indexer?.stop()
      indexer = undefined
    },
  }
}
