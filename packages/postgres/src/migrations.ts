import { nonNegativeNumber } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { createDeadLetterCountsSql, fillDeadLetterCounts, hasCounts } from './dead-letter-counts.js'
import {
  createDeadLetterCountIndexesSql,
  createDeadLetterCreatedIndexSql,
  createDeadLetterTableSql,
  deadLetterSweepIndexSql,
  widenDeadLetterCodeSql,
} from './dead-letter-sql.js'
import {
  createFenceTableSql,
  fenceExpiryIndexSql,
  fenceTableOf,
  fenceTokenColumnSql,
  heldKeysSql,
} from './fence-sql.js'
import { createJournalTableSql, journalCopiesColumnSql } from './journal-sql.js'
import type { Logger } from './maintenance.js'
import { type MigrateSession, openSession } from './migrate-session.js'
import { createPauseTableSql } from './pause-sql.js'
import {
  alterWithin,
  buildIndexConcurrently,
  relationExists as exists,
  indexOf,
  LockWaitError,
} from './schema-change.js'
import { bodyDigestColumnSql, checkTable, createTableSql, expiryIndexSql, quoteTable } from './sql.js'
import type { MigrateOptions, MigrateResult } from './types.js'

export type { MigrateOptions, MigrateResult }

/**
 * What each migration of `sql/` leaves in the database, for `health()` and `migrate()`: the table it makes or
 * changes (the store's `table` plus `suffix`), the columns (or check constraint) that then exist, and the indexes it
 * builds. A new migration adds one entry here; `health()` reports it as `postgres_migration_<number>`
 * (`dead_letter_postgres_migration_<number>`, `journal_postgres_migration_<number>`), and `migrate()` builds its
 * indexes.
 */
export interface Migration {
  /** Its number in `sql/`: `'004'`. */
  number: string
  /** Its file in `sql/`. */
  file: string
  /** Which store needs it. */
  store: 'events' | 'dead_letters' | 'journal' | 'pauses'
  /** Appended to the store's `table` to name the table it makes (`'_fences'`). @default '' */
  suffix?: string
  /** Columns it creates or adds. */
  columns: readonly string[]
  /**
   * The indexes it builds, as `CREATE INDEX IF NOT EXISTS <name> ON <table> ...` statements for the store's
   * `table`: `migrate()` builds each `CONCURRENTLY`, and `health()` checks each exists and is valid.
   */
  indexes?: (table: string) => readonly string[]
  /** What is slow while only its indexes are missing. @default without */
  indexesWithout?: string
  /** A text every one of the table's check constraints naming `handler_failed` contains once applied. */
  constraintIncludes?: string
  /** What breaks without it; a migration needed only by an option is a warning. */
  without: string
  severity?: 'warning'
}

export const MIGRATIONS: readonly Migration[] = [
  {
    number: '001',
    file: '001_payhooks_events.sql',
    store: 'events',
    columns: ['event_id', 'token', 'expires_at'],
    without: 'every delivery is refused 503',
  },
  {
    number: '002',
    file: '002_payhooks_dead_letters.sql',
    store: 'dead_letters',
    columns: [
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
    ],
    indexes: (table) => statementsOf(createDeadLetterTableSql(table)).slice(1),
    indexesWithout: 'each page of letters reads the whole table',
    without: 'no event can be parked, so events that need parking are refused',
  },
  {
    number: '003',
    file: '003_payhooks_dead_letters_stale_event.sql',
    store: 'dead_letters',
    columns: [],
    constraintIncludes: 'stale_event',
    without: 'stale events (a resend after a long outage) cannot be parked and are refused',
  },
  {
    number: '004',
    file: '004_payhooks_events_body_digest.sql',
    store: 'events',
    columns: ['body_digest'],
    without: 'copies of a handled event with other bytes are not reported',
    severity: 'warning',
  },
  {
    number: '005',
    file: '005_payhooks_events_fences.sql',
    store: 'events',
    suffix: '_fences',
    columns: ['ordering_key', 'holder', 'held_until', 'mark_at', 'mark_type', 'mark_id', 'keep_until'],
    without: 'events of types with ordering rules are refused',
    severity: 'warning',
  },
  {
    number: '006',
    file: '006_payhooks_events_fence_token.sql',
    store: 'events',
    suffix: '_fences',
    columns: ['fence_token'],
    without: 'events of types with ordering rules are refused 503 (no fencing token)',
    severity: 'warning',
  },
  {
    number: '007',
    file: '007_payhooks_events_held_keys.sql',
    store: 'events',
    suffix: '_fences',
    columns: ['held_since', 'holder_event_id', 'holder_event_type'],
    indexes: (table) => (fenceTableOf(table) === undefined ? [] : statementsOf(heldKeysSql(table)).slice(1)),
    indexesWithout: 'webhooks.heldKeys() reads every fence',
    without: 'webhooks.heldKeys() cannot list the ordering keys held (it rejects, naming this migration)',
    severity: 'warning',
  },
  {
    number: '008',
    file: '008_payhooks_dead_letters_counts.sql',
    store: 'dead_letters',
    columns: [],
    indexes: (table) => statementsOf(createDeadLetterCountIndexesSql(table)),
    without: 'counts and pages of letters by code or event type read the whole table',
    severity: 'warning',
  },
  {
    number: '009',
    file: '009_payhooks_journal.sql',
    store: 'journal',
    columns: [
      'at',
      'id',
      'event_id',
      'event_type',
      'created_at',
      'status',
      'outcome',
      'instance',
      'duration_ms',
      'secret_index',
      'secret_label',
    ],
    indexes: (table) => statementsOf(createJournalTableSql(table)).slice(1),
    indexesWithout: "the journal's lists read the whole table",
    without: "the journal's writes fail: webhooks.events misses the answers (deliveries are unaffected)",
    severity: 'warning',
  },
  {
    number: '010',
    file: '010_payhooks_dead_letters_kept_counts.sql',
    store: 'dead_letters',
    suffix: '_counts',
    columns: ['status', 'code', 'event_type', 'shard', 'n'],
    indexes: (table) => [deadLetterSweepIndexSql(table)],
    indexesWithout: 'each batch of the sweep of replayed letters reads the whole table',
    without: 'count() reads the letters it counts (slower as the backlog grows)',
    severity: 'warning',
  },
  {
    number: '012',
    file: '012_payhooks_sweep_indexes.sql',
    store: 'events',
    columns: [],
    indexes: (table) => [
      expiryIndexSql(table),
      ...(fenceTableOf(table) === undefined ? [] : [fenceExpiryIndexSql(table)]),
    ],
    without: 'each batch of the hourly sweep reads the whole table (and the fences)',
    severity: 'warning',
  },
  {
    number: '013',
    file: '013_payhooks_journal_copies.sql',
    store: 'journal',
    columns: ['copies'],
    without: 'copies of one delivery past the first few in a minute are kept as one row without their count',
    severity: 'warning',
  },
  {
    number: '014',
    file: '014_payhooks_dead_letters_created.sql',
    store: 'dead_letters',
    columns: [],
    indexes: (table) => [createDeadLetterCreatedIndexSql(table)],
    without: 'counts and pages of letters by created time (createdAfter, createdBefore) read the whole table',
    severity: 'warning',
  },
  {
    number: '015',
    file: '015_payhooks_dead_letters_paused.sql',
    store: 'dead_letters',
    columns: [],
    constraintIncludes: 'paused',
    without: 'deliveries of a paused event type cannot be parked and are answered 503 paused (the service retries)',
    severity: 'warning',
  },
  {
    number: '016',
    file: '016_payhooks_pauses.sql',
    store: 'pauses',
    columns: ['event_type', 'reason', 'since', 'paused_by'],
    without: 'webhooks.pause() rejects, and no receiver sees a pause',
    severity: 'warning',
  },
]

/** The statements of a multi-statement text, one each. */
function statementsOf(sql: string): string[] {
  return sql.split(/;\s*\n/).map((statement) => statement.trim())
}

/** The index statements of migration `number` for `table` (none when it builds none). */
function indexesOf(number: string, table: string): readonly string[] {
  return MIGRATIONS.find((migration) => migration.number === number)?.indexes?.(table) ?? []
}

async function hasColumn(pool: Pool, relation: string, column: string): Promise<boolean> {
  const { rows } = await pool.query(
    'SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = $2 AND NOT attisdropped',
    [quoteTable(relation), column],
  )
  return rows.length > 0
}

/**
 * Applies the migrations of `sql/` missing from the database, the way a release step does before the new version
 * rolls out: the store's table and its fences (001, 004 to 007, and 012: the sweep's indexes), the dead letters'
 * (002, 003, 008, and 010: the counts' triggers, then the counts filled from one snapshot while letters go on being
 * written; 014: the index of the events' `created_at`), then the journal's (009: made even before the journal is
 * turned on, so the release that turns it on has its table; 013: its `copies` column). Each
 * `ALTER TABLE` runs under a short `lock_timeout` and is tried again with backoff while a long transaction holds the
 * table, so deliveries are never queued behind it; indexes are built `CONCURRENTLY`, outside a transaction (a
 * leftover INVALID index of an interrupted build is dropped and built again); while a build waits for a long
 * transaction, `logger` is told which (pid, state, since when), once a second and then every 10 s. Safe to run again,
 * and from several places at once, beside receivers starting on the same tables: a run works on one connection of
 * `pool` holding the turn at schema changes of each table it changes (a session advisory lock, taken all or none,
 * tried again every 200 ms and logged while another holds one), and every other schema change of those tables takes
 * the same turn: another run, a receiver's `CREATE`/`ALTER TABLE` on first use (which waits for it at most its
 * `migrationLockTimeoutMs`, then fails and is tried again by the next delivery) and every index a receiver builds
 * `CONCURRENTLY` in the background (tried again later). So they go one at a time, never deadlocking, and the later
 * finds it all applied (an unqualified table name is the current schema's, so `payhooks_events` and
 * `public.payhooks_events` share a turn). The CLI runs it as `payhooks migrate --postgres URL`.
 *
 * @example
 * import { migrate } from '@payhooks/postgres'
 * import pg from 'pg'
 *
 * const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL })
 * const { applied } = await migrate(pool) // e.g. ['007']
 * await pool.end()
 */
export async function migrate(pool: Pool, options: MigrateOptions = {}): Promise<MigrateResult> {
  const table = checkTable(options.table ?? 'payhooks_events', 'migrate')
  const deadLetters = options.deadLetterTable ?? 'payhooks_dead_letters'
  const letters = deadLetters === false ? undefined : checkTable(deadLetters, 'migrate')
  const journal = options.journalTable ?? 'payhooks_journal'
  const entries = journal === false ? undefined : checkTable(journal, 'migrate')
  const pauseTable = options.pauseTable ?? false
  const pauses = pauseTable === false ? undefined : checkTable(pauseTable, 'migrate')
  const lockTimeoutMs = nonNegativeNumber(options.lockTimeoutMs ?? 2000, 'migrate', 'lockTimeoutMs')
  const attempts = Math.max(1, Math.floor(nonNegativeNumber(options.attempts ?? 10, 'migrate', 'attempts')))
  const logger = options.logger ?? console
  // Every table the run may change: the fences are changed by their own turn, as the instances change them.
  const tables = [table, fenceTableOf(table), letters, entries, pauses].filter(
    (name): name is string => name !== undefined,
  )
  const session = await openSession(pool, tables, logger)
  try {
    return await applyMissing(session, { table, letters, entries, pauses, lockTimeoutMs, attempts, logger })
  } finally {
    await session.release()
  }
}

interface Run {
  table: string
  letters: string | undefined
  entries: string | undefined
  pauses: string | undefined
  lockTimeoutMs: number
  attempts: number
  logger: Logger
}

/** The migrations missing, applied in order on the run's own session. */
async function applyMissing(session: MigrateSession, run: Run): Promise<MigrateResult> {
  const { table, letters, entries, pauses, lockTimeoutMs, attempts, logger } = run
  const db = session.db
  const applied: string[] = []
  const alter = async (number: string, relation: string, ddl: string) => {
    for (let attempt = 1, delayMs = 1000; ; attempt++, delayMs = Math.min(delayMs * 2, 15_000)) {
      try {
        await alterWithin(db, number, relation, ddl, lockTimeoutMs)
        applied.push(number)
        return
      } catch (error) {
        if (!(error instanceof LockWaitError) || attempt >= attempts) throw error
        ;(logger.warn ?? logger.error).call(
          logger,
          `[payhooks] migrate: migration ${number} waited ${lockTimeoutMs} ms for its lock on ${relation}${error.holders}; trying again in ${delayMs / 1000} s (${attempt} of ${attempts})`,
        )
        await new Promise((resolve) => setTimeout(resolve, delayMs))
      }
    }
  }
  const index = async (number: string, statement: string) => {
    const { name, table: relation } = indexOf(statement)
    const built = await session.watch(`migration ${number} (index ${name})`, relation, () =>
      buildIndexConcurrently(db, statement),
    )
    if (built === 'built' && !applied.includes(number)) applied.push(number)
  }

  if (!(await exists(db, table))) await alter('001', table, createTableSql(table))
  if (!(await hasColumn(db, table, 'body_digest'))) await alter('004', table, bodyDigestColumnSql(table))
  const fences = fenceTableOf(table)
  if (fences !== undefined) {
    if (!(await exists(db, fences))) await alter('005', fences, createFenceTableSql(table))
    if (!(await hasColumn(db, fences, 'fence_token'))) await alter('006', fences, fenceTokenColumnSql(table))
    const [columns] = statementsOf(heldKeysSql(table)) as [string]
    let held = true
    for (const column of ['held_since', 'holder_event_id', 'holder_event_type']) {
      held &&= await hasColumn(db, fences, column)
    }
    if (!held) await alter('007', fences, columns)
    for (const statement of indexesOf('007', table)) await index('007', statement)
  }
  for (const statement of indexesOf('012', table)) await index('012', statement)
  if (letters !== undefined) {
    if (!(await exists(db, letters))) await alter('002', letters, createDeadLetterTableSql(letters))
    for (const statement of indexesOf('002', letters)) await index('002', statement)
    // One statement widens the check to every code (003, then 015): counted as 015 when it lacked paused.
    const lacked = await lacksCode(db, letters, 'paused')
    await alterWithin(db, '003', letters, widenDeadLetterCodeSql(letters), lockTimeoutMs)
    if (lacked) applied.push('015')
    for (const statement of indexesOf('008', letters)) await index('008', statement)
    if (!(await hasCounts(db, letters))) await alter('010', letters, createDeadLetterCountsSql(letters))
    if ((await fillDeadLetterCounts(db, letters)) && !applied.includes('010')) applied.push('010')
    for (const statement of indexesOf('010', letters)) await index('010', statement)
    for (const statement of indexesOf('014', letters)) await index('014', statement)
  }
  if (entries !== undefined) {
    // A new table is empty: its indexes come at once; an existing one gets a missing index built CONCURRENTLY.
    if (!(await exists(db, entries))) await alter('009', entries, createJournalTableSql(entries))
    else {
      for (const statement of indexesOf('009', entries)) await index('009', statement)
      if (!(await hasColumn(db, entries, 'copies'))) await alter('013', entries, journalCopiesColumnSql(entries))
    }
  }
  if (pauses !== undefined && !(await exists(db, pauses))) await alter('016', pauses, createPauseTableSql(pauses))
  return { applied }
}

/** Whether `table`'s check on `code` (the one naming `handler_failed`) does not name `code` yet. */
async function lacksCode(db: Pool, table: string, code: string): Promise<boolean> {
  const { rows } = await db.query<{ def: string }>(
    `SELECT pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'c'`,
    [quoteTable(table)],
  )
  return rows.some((row) => row.def.includes('handler_failed') && !row.def.includes(code))
}
