// migrate() from several places at once, and behind a long reader (issue 51): two runs at once on a fresh schema
// deadlocked (CREATE INDEX CONCURRENTLY of one waiting for the other's ALTER TABLE, which waited for the build),
// though the upgrading guide says several places at once are safe; an index build waiting behind a reader said
// nothing for as long as the reader ran.
import { migrate } from '@payhooks/postgres'
import { expect, it } from 'vitest'
import { runCli } from '../fixtures/cli-run.js'
import { postgresHarness } from '../fixtures/postgres-harness.js'

const { admin, newPool, tablesOfTest, url } = postgresHarness()
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Every table a migrate() run on `table` makes, dropped after the test. */
async function names() {
  const { store } = await tablesOfTest()
  const letters = `${store}_letters`
  const journal = `${store}_journal`
  return {
    options: { table: store, deadLetterTable: letters, journalTable: journal },
    drop: async () => {
      await admin.query(`DROP TABLE IF EXISTS ${store}_fences, ${letters}, ${letters}_counts, ${journal}`)
      await admin.query(`DROP FUNCTION IF EXISTS ${letters}_count_fn`)
    },
  }
}

it('two migrate() at once on a fresh schema both succeed, round after round', async () => {
  const silent = { warn() {}, error() {} }
  for (let round = 0; round < 5; round++) {
    const { options, drop } = await names()
    try {
      const runs = await Promise.allSettled([
        migrate(newPool(3), { ...options, logger: silent }),
        migrate(newPool(3), { ...options, logger: silent }),
      ])
      const failures = runs.flatMap((run) => (run.status === 'rejected' ? [String(run.reason)] : []))
      expect(failures, `round ${round + 1}`).toEqual([])
      // One applied what was missing; the other, running after it, found it all there.
      const applied = runs.map((run) => (run.status === 'fulfilled' ? run.value.applied : []))
      expect(applied.map((list) => list.join(' ')).sort()).toEqual(['', '001 004 005 006 007 012 002 008 010 009'])
    } finally {
      await drop()
    }
  }
}, 120_000)

it('`payhooks migrate` says what its index build waits for: the reader holding it back, by pid', async () => {
  const { options, drop } = await names()
  const pool = newPool(3)
  // The tables of an earlier release, without 012's sweep index: migrate builds it CONCURRENTLY.
  await migrate(pool, { ...options, logger: { warn() {}, error() {} } })
  await admin.query(`DROP INDEX ${options.table}_expiry_idx`)
  const reader = await newPool(1).connect()
  try {
    // A reader in a transaction with a snapshot: CREATE INDEX CONCURRENTLY waits for it to end.
    await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
    await reader.query(`SELECT count(*) FROM ${options.table}`)
    const pid = (await reader.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
    const run = runCli(
      [
        'migrate',
        '--postgres',
        url,
        '--table',
        options.table,
        '--dead-letter-table',
        options.deadLetterTable,
        '--journal-table',
        options.journalTable,
      ],
      { timeoutMs: 30_000 },
    )
    await sleep(4000)
    await reader.query('COMMIT')
    const result = await run
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Applied: 012\n')
    expect(result.stderr).toMatch(
      new RegExp(
        `^\\[payhooks\\] migrate: migration 012 \\(index ${options.table}_expiry_idx\\) is waiting for a lock on ${options.table} held by pid ${pid} \\(idle in transaction; query started \\d+ s ago\\)`,
        'm',
      ),
    )
  } finally {
    await reader.query('ROLLBACK').catch(() => {})
    reader.release()
    await drop()
  }
})
