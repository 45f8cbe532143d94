import type { Pool } from 'pg'
import { type Database, databaseOf, type Run } from './database.js'
import { changeWithin, type Logger } from './maintenance.js'
import { quoteTable } from './sql.js'
import { giveTurn, heldBy, holderOf, TurnWaitError, tryTurn } from './turn.js'

/** PostgreSQL's `lock_not_available`: a lock not granted within `lock_timeout`. */
const LOCK_NOT_AVAILABLE = '55P03'

/** The sessions holding a lock on `relation`, what lock, and for how long their transaction has been open. */
const HOLDERS = `SELECT l.pid, l.mode, coalesce(extract(epoch FROM clock_timestamp() - a.xact_start), 0)::float8 AS open_s
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.relation = to_regclass($1) AND l.granted AND l.pid <> pg_backend_pid() ORDER BY a.xact_start LIMIT 5`

/** A schema change that did not get its lock in time: which migration, on what, and who held it. */
export class LockWaitError extends Error {
  readonly code = LOCK_NOT_AVAILABLE
  constructor(
    readonly migration: string,
    readonly relation: string,
    readonly holders: string,
  ) {
    super(`migration ${migration} waited too long for its lock on ${relation}${holders}`)
    this.name = 'LockWaitError'
  }
}

async function holdersOf(pool: Pool | Database, relation: string): Promise<string> {
  try {
    const { rows } = await databaseOf(pool).query<{ pid: number; mode: string; open_s: number }>(HOLDERS, [
      quoteTable(relation),
    ])
    if (rows.length === 0) return ''
    const each = rows.map((row) => `pid ${row.pid} ${row.mode}, in a transaction for ${Math.round(row.open_s)} s`)
    return `, held by ${each.join('; ')}`
  } catch {
    return ''
  }
}

/**
 * Runs `ddl` in a transaction of its own holding the turn of `relation` at schema changes (see turn.ts: instances
 * starting together, migrate runs and index builds take turns) and under `SET LOCAL lock_timeout`: a lock not granted
 * within `lockTimeoutMs` gives up (a {@link LockWaitError} naming the sessions holding one), rather than queue every
 * other statement on the table behind an `ALTER TABLE` waiting for a long read. The turn is waited for as long as
 * another instance's change holds it (its own timeout bounds it: under load, counting that wait failed a fleet's
 * init()), and at most `lockTimeoutMs` while a migrate run or an index build does (a {@link LockWaitError} naming it).
 */
export async function alterWithin(
  pool: Pool | Database,
  migration: string,
  relation: string,
  ddl: string,
  lockTimeoutMs: number,
): Promise<void> {
  try {
    await changeWithin(pool, relation, `migration ${migration}`, lockTimeoutMs, async (run) => {
      await run(`SET LOCAL lock_timeout = ${Math.max(1, Math.round(lockTimeoutMs))}`)
      await run(ddl)
    })
  } catch (error) {
    if (error instanceof TurnWaitError) {
      throw new LockWaitError(migration, relation, `: its turn at schema changes${heldBy(error.holder)}`)
    }
    if ((error as { code?: unknown }).code !== LOCK_NOT_AVAILABLE) throw error
    throw new LockWaitError(migration, relation, await holdersOf(pool, relation))
  }
}

/**
 * Whether the table `relation` has every one of `columns` (comma-separated), read from the catalog: a probe
 * `SELECT <columns> FROM <table> LIMIT 0` locked the table for its statement, so an instance starting beside another
 * made that one's `ALTER TABLE` give up at its short lock_timeout. A missing table is probed as before, failing with
 * PostgreSQL's own error (42P01).
 */
export async function hasColumns(
  run: (text: string, values: unknown[]) => Promise<{ rows: unknown[] }>,
  relation: string,
  columns: string,
): Promise<boolean> {
  const names = columns.split(',').map((name) => name.trim())
  const placeholders = names.map((_, i) => `$${i + 2}`).join(', ')
  const { rows } = (await run(
    `SELECT to_regclass($1) IS NOT NULL AS present, (SELECT count(*)::int FROM pg_attribute
      WHERE attrelid = to_regclass($1) AND attname IN (${placeholders}) AND NOT attisdropped) AS found`,
    [quoteTable(relation), ...names],
  )) as { rows: { present: boolean; found: number }[] }
  if (rows[0]?.present) return Number(rows[0].found) === names.length
  try {
    await run(`SELECT ${columns} FROM ${quoteTable(relation)} LIMIT 0`, [])
    return true
  } catch (error) {
    if ((error as { code?: unknown }).code === '42703') return false
    throw error
  }
}

/**
 * Whether the table `relation` (checked, schema-qualified or not) exists: looked up quoted, as every statement names
 * it, so a mixed-case name is found as it was made.
 */
export const relationExists = async (pool: Pool | Database, relation: string) =>
  (
    await databaseOf(pool).query<{ found: string | null }>('SELECT to_regclass($1)::text AS found', [
      quoteTable(relation),
    ])
  ).rows[0]?.found != null

const NAME = '("[^"]+"|[A-Za-z0-9_]+)'
const INDEX_STATEMENT = new RegExp(`^CREATE INDEX IF NOT EXISTS ${NAME} ON (${NAME}(?:\\.${NAME})?) `)

/** What a `CREATE INDEX IF NOT EXISTS <name> ON <table> ...` statement builds. */
export interface IndexOf {
  /** The index as the statement names it, in its table's schema: for `to_regclass` and `DROP INDEX`. */
  regclass: string
  /** Its name, unquoted, for messages. */
  name: string
  /** Its table, unquoted, for messages. */
  table: string
}

/**
 * The index a `CREATE INDEX IF NOT EXISTS` statement of this package builds, named as the statement names it (a
 * quoted name keeps its case, an unquoted one is folded, as PostgreSQL made it).
 */
export function indexOf(statement: string): IndexOf {
  const match = INDEX_STATEMENT.exec(statement.trim())
  if (!match) throw new TypeError('indexOf: not a CREATE INDEX IF NOT EXISTS statement')
  const [, name, relation, first, second] = match as unknown as [string, string, string, string, string | undefined]
  const unquote = (part: string) => part.replaceAll('"', '')
  return {
    regclass: second === undefined ? name : `${first}.${name}`,
    name: unquote(name),
    table: unquote(relation),
  }
}

/**
 * Builds the index of `statement` (a `CREATE INDEX IF NOT EXISTS <name> ON <table> ...`) with `CONCURRENTLY`, outside
 * any transaction, so writes go on while it is built; a leftover INVALID index of that name (an interrupted
 * concurrent build) is dropped first. The build holds its table's turn at schema changes (a session advisory lock,
 * see turn.ts; a migrate run's own session holds it already and takes it again): while another session holds it,
 * rejects at once with a {@link TurnWaitError}, building nothing (a background build is retried later). Resolves
 * `present` when a valid index of that name exists, `busy` while an earlier release's instance builds it.
 */
export async function buildIndexConcurrently(
  pool: Pool | Database,
  statement: string,
): Promise<'built' | 'present' | 'busy'> {
  const { regclass: index, name, table } = indexOf(statement)
  const { session } = databaseOf(pool)
  if (session === undefined) {
    throw new Error(`building ${index} concurrently needs a connection of its own, which this library does not give`)
  }
  return session(async (run) => {
    const client = { query: run }
    if (!(await tryTurn(client, table))) {
      throw new TurnWaitError(`index ${name}`, table, await holderOf(client, table))
    }
    try {
      return await buildHoldingTurn(run, index, statement)
    } finally {
      await giveTurn(client, table)
    }
  })
}

/** The build of {@link buildIndexConcurrently}, its turn taken: under the index's own key too, as earlier releases. */
async function buildHoldingTurn(run: Run, index: string, statement: string): Promise<'built' | 'present' | 'busy'> {
  const key = `payhooks:index:${index}`
  const { rows } = await run<{ locked: boolean }>('SELECT pg_try_advisory_lock(hashtext($1)) AS locked', [key])
  if (!rows[0]?.locked) return 'busy'
  try {
    const found = await run<{ valid: boolean }>(
      'SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)',
      [index],
    )
    const valid = found.rows[0]?.valid
    if (valid === true) return 'present'
    if (valid === false) await run(`DROP INDEX CONCURRENTLY IF EXISTS ${index}`)
    await run(statement.trim().replace(/^CREATE INDEX IF NOT EXISTS/, 'CREATE INDEX CONCURRENTLY IF NOT EXISTS'))
    return 'built'
  } finally {
    await run('SELECT pg_advisory_unlock(hashtext($1))', [key])
  }
}

/** Options of {@link retryInBackground}. */
interface Background {
  /** What is tried, for the log: `migration 007 (sql/007_payhooks_events_held_keys.sql)`. */
  what: string
  /** What works differently until it is applied, for the log. */
  meanwhile: string
  logger: Logger
  /** First wait before a retry, doubled each time up to `maxDelayMs`. */
  delayMs?: number
  maxDelayMs?: number
  /** How long to wait before the first try. @default 0 */
  firstDelayMs?: number
}

/**
 * Runs `attempt` now and again after each failure, with backoff (1 s doubled up to a minute), on unref'd timers,
 * logging each failure (a lock not got names the migration, the relation and who held it) until it succeeds or
 * `stop()` is called. Deliveries never wait for it.
 */
export function retryInBackground(attempt: () => Promise<void>, options: Background): { stop(): void } {
  const { what, meanwhile, logger } = options
  const maxDelayMs = options.maxDelayMs ?? 60_000
  let delayMs = options.delayMs ?? 1000
  let timer: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const run = () => {
    timer = undefined
    attempt().then(
      () => {},
      (error: unknown) => {
        if (stopped) return
        const why =
          error instanceof LockWaitError
            ? `waited too long for its lock on ${error.relation}${error.holders}`
            : error instanceof TurnWaitError
              ? `found its turn at the schema changes of ${error.relation}${heldBy(error.holder)}`
              : `failed: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`
        ;(logger.warn ?? logger.error).call(
          logger,
          `[payhooks] ${what} ${why}; retrying in ${Math.round(delayMs / 1000)} s (meanwhile ${meanwhile}). Apply it at a quiet time with payhooks migrate --postgres URL.`,
        )
        timer = setTimeout(run, delayMs)
        ;(timer as { unref?: () => void }).unref?.()
        delayMs = Math.min(delayMs * 2, maxDelayMs)
      },
    )
  }
  if ((options.firstDelayMs ?? 0) > 0) {
    timer = setTimeout(run, options.firstDelayMs)
    ;(timer as { unref?: () => void }).unref?.()
  } else run()
  return {
    stop() {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
    },
  }
}
