import type { Pool } from 'mysql2/promise'
import { createDeadLetterTableSql, DEAD_LETTER_COLUMNS } from './dead-letter-sql.js'
import { createJournalTableSql, JOURNAL_COLUMNS } from './journal-sql.js'
import { checkPool } from './pool-checks.js'
import { columnsOf, LOCK_WAIT_TIMEOUT, MIGRATIONS, relationOf, runDdl } from './schema.js'
import { checkTable } from './sql.js'

/** Options of {@link migrate}. */
export interface MigrateOptions {
  /**
   * The store's table (its fences are `<table>_fences`).
   * @default 'payhooks_events'
   */
  table?: string
  /**
   * The dead letters' table (`mysqlDeadLetterStore`); false leaves it alone.
   * @default 'payhooks_dead_letters'
   */
  deadLetterTable?: string | false
  /**
   * The journal's table (`mysqlJournal`), made ahead of the release that turns the journal on; false leaves it alone.
   * @default 'payhooks_journal'
   */
  journalTable?: string | false
  /**
   * How long each statement may wait for its table's metadata lock (`lock_wait_timeout`, whole seconds, at least 1)
   * before it gives up and is tried again after a pause: a DDL queued behind a long transaction would hold up every
   * statement on its table meanwhile.
   * @default 2000
   */
  lockTimeoutMs?: number
  /**
   * How many times a statement that timed out waiting for its lock is tried, the pause doubling from 1 s.
   * @default 5
   */
  attempts?: number
  /** Where a statement that timed out waiting for its lock is said, before it is tried again (one line each). */
  log?(line: string): void
}

/** What {@link migrate} did: the migrations of `sql/` it applied (those whose table or columns were missing). */
export interface MigrateResult {
  applied: string[]
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Applies the store's migrations (the files of `sql/`) to the pool's database, ahead of a release: each statement a
 * no-op once applied, run under a short `lock_wait_timeout` and tried again after a pause when it timed out waiting
 * for its table's lock (a long transaction holding it), so deliveries never queue behind it. Later migrations that
 * alter a table name their algorithm (`ALGORITHM=INSTANT`, else `INPLACE, LOCK=NONE`), so they run online. What
 * `payhooks migrate --mysql URL` runs.
 *
 * @example
 * import { migrate } from '@payhooks/mysql'
 * import mysql from 'mysql2/promise'
 *
 * const pool = mysql.createPool(process.env.MYSQL_URL!)
 * console.log((await migrate(pool)).applied)
 * await pool.end()
 */
export async function migrate(pool: Pool, options: MigrateOptions = {}): Promise<MigrateResult> {
  checkPool(pool, 'migrate')
  const table = checkTable(options.table ?? 'payhooks_events', 'migrate')
  const lockTimeoutMs = options.lockTimeoutMs ?? 2000
  const attempts = options.attempts ?? 5
  const journal =
    options.journalTable === false ? undefined : checkTable(options.journalTable ?? 'payhooks_journal', 'migrate')
  const steps = MIGRATIONS.map((migration) => ({
    file: migration.file,
    relation: relationOf(table, migration),
    columns: migration.columns,
    ddl: migration.ddl(table),
  }))
  const letters =
    options.deadLetterTable === false
      ? undefined
      : checkTable(options.deadLetterTable ?? 'payhooks_dead_letters', 'migrate')
  if (letters !== undefined) {
    steps.push({
      file: '003_payhooks_dead_letters.sql',
      relation: letters,
      columns: DEAD_LETTER_COLUMNS,
      ddl: [createDeadLetterTableSql(letters)],
    })
  }
  if (journal !== undefined) {
    steps.push({
      file: '004_payhooks_journal.sql',
      relation: journal,
      columns: JOURNAL_COLUMNS,
      ddl: [createJournalTableSql(journal)],
    })
  }
  const applied: string[] = []
  for (const step of steps) {
    const present = await columnsOf(pool, step.relation)
    if (step.columns.every((column) => present.has(column))) continue
    for (let attempt = 1; ; attempt++) {
      try {
        await runDdl(pool, step.ddl, lockTimeoutMs)
        break
      } catch (error) {
        if ((error as { errno?: unknown }).errno !== LOCK_WAIT_TIMEOUT || attempt >= attempts) throw error
        options.log?.(
          `${step.file} waited too long for its lock on ${step.relation}; trying again (${attempt}/${attempts})`,
        )
        await sleep(1000 * 2 ** (attempt - 1))
      }
    }
    applied.push(step.file)
  }
  return { applied }
}
