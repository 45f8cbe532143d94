import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { CommandFailed, type Context, integerValue, out, printJson, requireString, UsageError } from '../context.js'
import type { CommandSpec } from '../spec.js'

interface PgPool {
  end(): Promise<void>
}
interface Postgres {
  migrate(
    pool: PgPool,
    options: {
      table?: string
      deadLetterTable?: string | false
      journalTable?: string | false
      lockTimeoutMs?: number
      logger?: unknown
    },
  ): Promise<{ applied: string[] }>
}

interface MysqlPool {
  end(): Promise<void>
}
interface Mysql {
  migrate(
    pool: MysqlPool,
    options: {
      table?: string
      deadLetterTable?: string | false
      journalTable?: string | false
      lockTimeoutMs?: number
      log?(line: string): void
    },
  ): Promise<{ applied: string[] }>
}

type Exported = string | { import?: Exported; default?: Exported } | undefined

/** The ES module entry of a package.json's `exports['.']` (else `module`, `main`). */
function entryOf(manifest: { exports?: Exported | Record<string, Exported>; module?: string; main?: string }) {
  let entry = (manifest.exports as Record<string, Exported> | undefined)?.['.'] ?? (manifest.exports as Exported)
  while (entry !== undefined && typeof entry !== 'string') entry = entry.import ?? entry.default
  return entry ?? manifest.module ?? manifest.main ?? 'index.js'
}

/** A package of the app in the current directory (the CLI is installed into it with pg and @payhooks/postgres). */
async function load<T>(name: string): Promise<T> {
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    const root = join(dir, 'node_modules', name)
    if (existsSync(join(root, 'package.json'))) {
      const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
      const loaded = (await import(pathToFileURL(join(root, entryOf(manifest))).href)) as T & { default?: T }
      return { ...loaded.default, ...loaded } as T
    }
    if (dirname(dir) === dir) break
  }
  const wanted = name.includes('mysql') ? 'mysql2 and @payhooks/mysql' : 'pg and @payhooks/postgres'
  throw new UsageError(`${name} is not installed here: run it where your app has ${wanted}`)
}

const migrateCommand: CommandSpec = {
  name: ['migrate'],
  usage:
    '--postgres <url> | --mysql <url> [--table <name>] [--dead-letter-table <name>|--no-dead-letters] [--journal-table <name>|--no-journal] [--lock-timeout-ms <ms>]',
  summary: 'apply the PostgreSQL (or MySQL) migrations missing, as a release step before a rollout',
  details: [
    "Applies sql/'s migrations of @payhooks/postgres that the database lacks: the store's table and its",
    "fences, the dead letters, then the journal's table (made ahead of the release that turns it on).",
    'Each ALTER TABLE waits at most --lock-timeout-ms for its lock, then',
    'lets the queries queued behind it through and tries again later (a long read never stalls',
    'deliveries); indexes are built CONCURRENTLY, and a build waiting for a long transaction says which',
    '(by pid) on stderr. Safe to run again, and from several places at once: runs take turns at each table.',
    'Run it where the app is installed (it uses the app’s pg and @payhooks/postgres).',
    "With --mysql: applies the migrations of @payhooks/mysql (the store's table and its fences), each",
    'statement under a lock_wait_timeout of --lock-timeout-ms, tried again with backoff when it timed out',
    'behind a long transaction; run it where the app has mysql2 and @payhooks/mysql.',
  ],
  examples: [
    'payhooks migrate --postgres "$DATABASE_URL"',
    'payhooks migrate --postgres "$DATABASE_URL" --json',
    'payhooks migrate --mysql "$MYSQL_URL"',
  ],
  options: {
    postgres: { type: 'string', arg: '<url>', env: 'DATABASE_URL', help: 'PostgreSQL connection string' },
    mysql: { type: 'string', arg: '<url>', help: 'MySQL or MariaDB connection string (mysql://user:pass@host/db)' },
    table: { type: 'string', arg: '<name>', help: "the store's table (default payhooks_events)" },
    'dead-letter-table': {
      type: 'string',
      arg: '<name>',
      help: 'the dead-letter table (default payhooks_dead_letters)',
    },
    'dead-letters': { type: 'boolean', help: '--no-dead-letters leaves the dead-letter table alone' },
    'journal-table': { type: 'string', arg: '<name>', help: "the journal's table (default payhooks_journal)" },
    journal: { type: 'boolean', help: '--no-journal leaves the journal table alone' },
    'lock-timeout-ms': {
      type: 'string',
      arg: '<ms>',
      help: 'longest wait of an ALTER TABLE for its lock (default 2000)',
    },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx: Context) {
    if (ctx.values.mysql !== undefined) return migrateMysql(ctx)
    const url = requireString(ctx, 'postgres', 'DATABASE_URL')
    const lockTimeoutMs = integerValue(ctx, 'lock-timeout-ms', { min: 1, max: 600_000 })
    const table = ctx.values.table as string | undefined
    const deadLetterTable =
      ctx.values['dead-letters'] === false ? false : (ctx.values['dead-letter-table'] as string | undefined)
    const journalTable = ctx.values.journal === false ? false : (ctx.values['journal-table'] as string | undefined)
    const pg = await load<{ Pool: new (options: object) => PgPool }>('pg')
    const { migrate } = await load<Postgres>('@payhooks/postgres')
    const pool = new pg.Pool({ connectionString: url, max: 2, connectionTimeoutMillis: 10_000 })
    const logger = {
      warn: (line: string) => ctx.io.stderr.write(`${line}\n`),
      error: (line: string) => ctx.io.stderr.write(`${line}\n`),
    }
    try {
      const options = Object.fromEntries(
        Object.entries({ table, deadLetterTable, journalTable, lockTimeoutMs, logger }).filter(
          ([, value]) => value !== undefined,
        ),
      )
      const { applied } = await migrate(pool, options)
      if (ctx.json) printJson(ctx, { applied })
      else
        out(
          ctx,
          applied.length === 0 ? 'Nothing to apply: every migration is there.' : `Applied: ${applied.join(', ')}`,
        )
      return 0
    } catch (error) {
      if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(error.message)
      const code = (error as { code?: unknown }).code
      const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
      throw new CommandFailed(`${message}${typeof code === 'string' ? ` (${code})` : ''}`)
    } finally {
      await pool.end().catch(() => {})
    }
  },
}

/** Reports a failed migrate run in one line: the driver's message and code, never the connection string. */
function failed(error: unknown): never {
  if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(error.message)
  const code = (error as { code?: unknown }).code
  const message = (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? ''
  throw new CommandFailed(`${message}${typeof code === 'string' ? ` (${code})` : ''}`)
}

/** `payhooks migrate --mysql URL`: the migrations of @payhooks/mysql, through the app's mysql2. */
async function migrateMysql(ctx: Context): Promise<number> {
  const url = requireString(ctx, 'mysql')
  if (ctx.values.postgres !== undefined) throw new UsageError('give --postgres or --mysql, not both')
  const lockTimeoutMs = integerValue(ctx, 'lock-timeout-ms', { min: 1, max: 600_000 })
  const table = ctx.values.table as string | undefined
  const deadLetterTable: string | false | undefined =
    ctx.values['dead-letters'] === false ? false : (ctx.values['dead-letter-table'] as string | undefined)
  const journalTable: string | false | undefined =
    ctx.values.journal === false ? false : (ctx.values['journal-table'] as string | undefined)
  const mysql2 = await load<{ createPool(options: object): { promise(): MysqlPool } }>('mysql2')
  const { migrate } = await load<Mysql>('@payhooks/mysql')
  const pool = mysql2.createPool({ uri: url, connectionLimit: 2, connectTimeout: 10_000 }).promise()
  try {
    const options = {
      ...(table !== undefined ? { table } : {}),
      ...(deadLetterTable !== undefined ? { deadLetterTable } : {}),
      ...(journalTable !== undefined ? { journalTable } : {}),
      ...(lockTimeoutMs !== undefined ? { lockTimeoutMs } : {}),
      log: (line: string) => ctx.io.stderr.write(`[payhooks] migrate: ${line}\n`),
    }
    const { applied } = await migrate(pool, options)
    if (ctx.json) printJson(ctx, { applied })
    else
      out(ctx, applied.length === 0 ? 'Nothing to apply: every migration is there.' : `Applied: ${applied.join(', ')}`)
    return 0
  } catch (error) {
    failed(error)
  } finally {
    await pool.end().catch(() => {})
  }
}

export const migrateCommands = [migrateCommand]
