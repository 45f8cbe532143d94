import type { HealthCheck } from '@payhooks/core'
import type { Pool } from 'pg'
import { MIGRATIONS } from './migrations.js'
import { indexOf } from './schema-change.js'
import { quoteTable } from './sql.js'

const COLUMNS = `SELECT a.attname AS name FROM pg_attribute a
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`
const CONSTRAINTS = `SELECT pg_get_constraintdef(c.oid) AS def FROM pg_constraint c
WHERE c.conrelid = to_regclass($1) AND c.contype = 'c'`
const INDEX = 'SELECT indisvalid AS valid FROM pg_index WHERE indexrelid = to_regclass($1)'

/** Options of {@link postgresHealth}. */
export interface PostgresHealthOptions {
  /** Prefix of the checks' names: `postgres`, `dead_letter_postgres`, `journal_postgres` or `pause_postgres`. */
  name: string
  store: 'events' | 'dead_letters' | 'journal' | 'pauses'
  table: string
  /** Whether `init()` creates what is missing: a missing migration is then fine until the first delivery. */
  createTable: boolean
}

/**
 * The checks of a store on PostgreSQL: `<name>` (a `SELECT 1`, with its latency), then `<name>_migration_<nnn>`
 * for each migration of `sql/` the store needs, from {@link MIGRATIONS}: its table and columns present (and its
 * check constraint, for 003), and each index it builds present and valid. Reads the catalog only; creates nothing.
 */
export async function postgresHealth(pool: Pool, options: PostgresHealthOptions): Promise<HealthCheck[]> {
  const { name, store, table, createTable } = options
  const started = performance.now()
  try {
    await pool.query('SELECT 1')
  } catch (error) {
    const code = (error as { code?: unknown }).code
    return [
      {
        name,
        ok: false,
        detail: `PostgreSQL does not answer${typeof code === 'string' && /^[A-Z0-9_]{1,20}$/.test(code) ? ` (${code})` : ''}: deliveries are refused (503)`,
        fix: 'start PostgreSQL, or check the address, database and credentials of the pg.Pool',
      },
    ]
  }
  const checks: HealthCheck[] = [{ name, ok: true, latencyMs: Math.round((performance.now() - started) * 10) / 10 }]
  const columns = new Map<string, Set<string>>()
  const columnsOf = async (relation: string) => {
    let found = columns.get(relation)
    if (!found) {
      const { rows } = await pool.query<{ name: string }>(COLUMNS, [quoteTable(relation)])
      found = new Set(rows.map((row) => row.name))
      columns.set(relation, found)
    }
    return found
  }
  for (const migration of MIGRATIONS) {
    if (migration.store !== store) continue
    const relation = `${table}${migration.suffix ?? ''}`
    const present = await columnsOf(relation)
    const missing = migration.columns.filter((column) => !present.has(column))
    let problem: string | undefined
    if (present.size === 0) problem = `table ${relation} is missing`
    else if (missing.length > 0) problem = `${relation} lacks ${missing.join(', ')}`
    else if (migration.constraintIncludes) {
      const { rows } = await pool.query<{ def: string }>(CONSTRAINTS, [quoteTable(relation)])
      const stale = rows.some(
        (row) => row.def.includes('handler_failed') && !row.def.includes(migration.constraintIncludes as string),
      )
      if (stale) problem = `${relation}'s check on code does not allow ${migration.constraintIncludes}`
    }
    let indexOnly = false
    for (const statement of problem === undefined ? (migration.indexes?.(table) ?? []) : []) {
      const index = indexOf(statement)
      const { rows } = await pool.query<{ valid: boolean }>(INDEX, [index.regclass])
      if (rows[0]?.valid === true) continue
      problem = `index ${index.name} on ${index.table} is ${rows.length === 0 ? 'missing' : 'INVALID (an interrupted CONCURRENTLY build)'}`
      indexOnly = true
      break
    }
    const check: HealthCheck = { name: `${name}_migration_${migration.number}`, ok: problem === undefined }
    // An index missing slows what reads it, never refuses a delivery: a warning, whatever the migration's severity.
    if (migration.severity || indexOnly) check.severity = 'warning'
    if (problem === undefined) {
      check.detail = migration.file
    } else if (createTable) {
      check.ok = true
      check.detail = `${problem}: init() applies ${migration.file} at the first delivery (createTable)`
    } else {
      check.detail = `${problem}: ${indexOnly ? (migration.indexesWithout ?? migration.without) : migration.without}`
      check.fix = `apply sql/${migration.file} of @payhooks/postgres${table === defaultTable(store) ? '' : ` (for table ${table})`}${migration.indexes ? ', or run payhooks migrate --postgres URL (it builds indexes CONCURRENTLY)' : ''}`
    }
    checks.push(check)
  }
  return checks
}

const DEFAULT_TABLES = {
  events: 'payhooks_events',
  dead_letters: 'payhooks_dead_letters',
  journal: 'payhooks_journal',
  pauses: 'payhooks_pauses',
}

function defaultTable(store: keyof typeof DEFAULT_TABLES): string {
  return DEFAULT_TABLES[store]
}
