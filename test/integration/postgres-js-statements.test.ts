// How postgresJsStore sends its statements: prepared, as postgres.js's tagged templates are, so each of the store's
// fixed texts runs in one round trip once its connection has described it (unprepared, postgres.js sends every
// statement with values twice: Parse and Describe, then Bind and Execute); and a client made with `prepare: false`
// (behind PgBouncer's transaction mode) keeps its setting.
import { postgresJsStore } from '@payhooks/postgres/postgres-js'
import postgres from 'postgres'
import { describe, expect, it } from 'vitest'
import { databaseUrl } from '../fixtures/postgres.js'

/** One event claimed and committed with a write through `db`, on a one-connection client; its prepared statements. */
async function oneEvent(prepare: boolean) {
  const sql = postgres(databaseUrl(), { max: 1, prepare, onnotice: () => {} })
  const table = `pgjs_prepared_${prepare}_${process.pid}`
  try {
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}, ${table}_ledger, ${table}_fences`)
    await sql.unsafe(`CREATE TABLE ${table}_ledger (event_id text PRIMARY KEY)`)
    const store = postgresJsStore(sql, { table, sweepIntervalMs: 0 })
    await store.init()
    const claimed = await store.claim('evt_prepared', 60_000)
    if (claimed.status !== 'claimed') throw new Error(`not claimed: ${claimed.status}`)
    const outcome = await store.transaction('evt_prepared', claimed.token, async ({ db }) => {
      await db`INSERT INTO ${db(`${table}_ledger`)} (event_id) VALUES ('evt_prepared')`
      return true
    })
    const statements = (await sql`SELECT statement FROM pg_prepared_statements`).map((row) => row.statement as string)
    const [written] = await sql.unsafe(`SELECT count(*)::int AS n FROM ${table}_ledger`)
    const [done] = await sql.unsafe(`SELECT token IS NULL AS done FROM ${table} WHERE event_id = 'evt_prepared'`)
    store.shutdown?.()
    await sql.unsafe(`DROP TABLE IF EXISTS ${table}, ${table}_ledger, ${table}_fences`)
    return { outcome, statements, written: written?.n, done: done?.done }
  } finally {
    await sql.end()
  }
}

describe('postgresJsStore statements', () => {
  it('prepares its claim and its done marker on the connection, and commits them with the write', async () => {
    const { outcome, statements, written, done } = await oneEvent(true)
    expect(outcome).toBe('committed')
    expect([written, done]).toEqual([1, true])
    expect(statements.some((text) => /^INSERT INTO "\w+" AS e /.test(text))).toBe(true)
    expect(statements.some((text) => /^UPDATE "\w+" SET token = NULL/.test(text))).toBe(true)
  })

  it('prepares nothing on a client made with prepare: false, and commits the same', async () => {
    const { outcome, statements, written, done } = await oneEvent(false)
    expect(outcome).toBe('committed')
    expect([written, done]).toEqual([1, true])
    expect(statements).toEqual([])
  })
})
