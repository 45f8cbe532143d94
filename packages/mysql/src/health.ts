import type { HealthCheck } from '@payhooks/core'
import type { Pool } from 'mysql2/promise'
import { isClosed } from './pool-checks.js'
import { columnsOf, MIGRATIONS, relationOf } from './schema.js'

/**
 * The checks of the store on MySQL: `mysql` (a `SELECT 1`, with its latency), then `mysql_migration_<nnn>` for each
 * migration of `sql/`: its table and columns present. Reads the catalog only; creates nothing.
 */
export async function mysqlHealth(pool: Pool, table: string, createTable: boolean): Promise<HealthCheck[]> {
  if (isClosed(pool)) {
    return [
      {
        name: 'mysql',
        ok: false,
        detail: 'the mysql2 Pool was ended (pool.end()): deliveries are refused (503)',
        fix: 'give the store a live pool',
      },
    ]
  }
  const started = performance.now()
  try {
    await pool.query('SELECT 1')
  } catch (error) {
    const code = (error as { code?: unknown }).code
    return [
      {
        name: 'mysql',
        ok: false,
        detail: `MySQL does not answer${typeof code === 'string' && /^[A-Z0-9_]{1,40}$/.test(code) ? ` (${code})` : ''}: deliveries are refused (503)`,
        fix: 'start MySQL, or check the address, database and credentials of the mysql2 Pool',
      },
    ]
  }
  const checks: HealthCheck[] = [
    { name: 'mysql', ok: true, latencyMs: Math.round((performance.now() - started) * 10) / 10 },
  ]
  for (const migration of MIGRATIONS) {
    const relation = relationOf(table, migration)
    const present = await columnsOf(pool, relation)
    const missing = migration.columns.filter((column) => !present.has(column))
    const problem =
      present.size === 0
        ? `table ${relation} is missing`
        : missing.length > 0
          ? `${relation} lacks ${missing.join(', ')}`
          : undefined
    const check: HealthCheck = { name: `mysql_migration_${migration.number}`, ok: problem === undefined }
    if (problem === undefined) check.detail = migration.file
    else if (createTable) {
      check.ok = true
      check.detail = `${problem}: init() applies ${migration.file} at the first delivery (createTable)`
    } else {
      check.detail = `${problem}: deliveries are refused (503)`
      check.fix = `run payhooks migrate --mysql URL, or apply sql/${migration.file} of @payhooks/mysql${table === 'payhooks_events' ? '' : ` (for table ${table})`}`
    }
    checks.push(check)
  }
  return checks
}
