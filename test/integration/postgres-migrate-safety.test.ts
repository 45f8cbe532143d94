// migrate() from several places at once, and behind a long reader (issue 51): two runs at once on a fresh schema
// deadlocked (CREATE INDEX CONCURRENTLY of one waiting for the other's ALTER TABLE, which waited for the build),
// though the upgrading guide says several places at once are safe; an index build waiting behind a reader said
// nothing for as long as the reader ran.
import { randomUUID } from 'node:crypto'
import { migrate, postgresDeadLetterStore, postgresJournal, postgresStore } from '@payhooks/postgres'
import { expect, it, vi } from 'vitest'
import { runCli } from '../fixtures/cli-run.js'
import { runMigration } from '../fixtures/postgres.js'
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
      expect(applied.map((list) => list.join(' ')).sort()).toEqual([
        '',
        '001 004 005 006 007 012 002 015 008 010 014 009',
      ])
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
    const waitLine = new RegExp(
      `^\\[payhooks\\] migrate: migration 012 \\(index ${options.table}_expiry_idx\\) is waiting for a lock on ${options.table} held by pid ${pid} \\(idle in transaction; query started \\d+ s ago\\)`,
      'm',
    )
    // The reader commits once the run said what it waits for (its first report comes after a second of waiting),
    // however long the CLI took to start and reach the build: a fixed wait raced a loaded machine's start-up.
    let said = false
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
      {
        timeoutMs: 60_000,
        onStderr: (stderr) => {
          said ||= waitLine.test(stderr)
        },
      },
    )
    let ended = false
    const end = () => {
      ended = true
    }
    run.then(end, end)
    await vi.waitFor(
      () => {
        expect(ended, 'migrate ended before it said what it waits for').toBe(false)
        expect(said, 'the line naming the reader').toBe(true)
      },
      { timeout: 30_000, interval: 50 },
    )
    await reader.query('COMMIT')
    const result = await run
    expect(result.code).toBe(0)
    expect(result.stdout).toBe('Applied: 012\n')
    expect(result.stderr).toMatch(waitLine)
  } finally {
    await reader.query('ROLLBACK').catch(() => {})
    reader.release()
    await drop()
  }
}, 120_000)

it('a migrate() and two receivers starting at once on a fresh schema take turns at every schema change, index builds included: none deadlocks', async () => {
  // Each receiver's first use: the store's table, its fences (a claim with a position) with 007's index, the dead
  // letters with the background build of 008 and 010's indexes once the table is there, the journal. A receiver's
  // init that found the turn taken too long is tried again, as the next delivery would; a deadlock fails the test.
  const lines: string[] = []
  const logger = { warn: (line: string) => void lines.push(line), error: (line: string) => void lines.push(line) }
  for (let round = 0; round < 4; round++) {
    const schema = `turns_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    await admin.query(`CREATE SCHEMA ${schema}`)
    // Every other round starts from an earlier release's tables (001 and 002, a few letters): more to change at once.
    if (round % 2 === 1) {
      for (const file of ['001_payhooks_events.sql', '002_payhooks_dead_letters.sql']) {
        await runMigration(admin, schema, file)
      }
      await admin.query(
        `INSERT INTO ${schema}.payhooks_dead_letters (event_id, event_type, body, headers, code, reason, first_parked_at,
         parked_at, park_count, status) SELECT 'evt_' || n, 'x', '', '{}', 'handler_failed', 'r', now(), now(), 1, 'parked'
         FROM generate_series(1, 2000) AS n`,
      )
    }
    const options = {
      table: `${schema}.payhooks_events`,
      deadLetterTable: `${schema}.payhooks_dead_letters`,
      journalTable: `${schema}.payhooks_journal`,
    }
    const receivers = [0, 1].map(() => {
      const pool = newPool(4, { connectionTimeoutMillis: 10_000 })
      return {
        store: postgresStore(pool, { table: options.table, sweepIntervalMs: 0, logger }),
        letters: postgresDeadLetterStore(pool, { table: options.deadLetterTable, sweepIntervalMs: 0, logger }),
        journal: postgresJournal(pool, { table: options.journalTable, sweepIntervalMs: 0, logger }),
      }
    })
    const refusals: string[] = []
    const firstUse = async (step: () => Promise<unknown>) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await step()
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error)
          refusals.push(message)
          if (/deadlock detected/.test(message) || attempt >= 100) throw error
          await sleep(100)
        }
      }
    }
    try {
      const started = await Promise.allSettled([
        migrate(newPool(3), { ...options, logger }),
        ...receivers.flatMap(({ store, letters, journal }, n) => [
          firstUse(async () => {
            await store.init?.()
            await store.claim(`evt_${n}`, 60_000, undefined, { key: `key_${n}`, at: Date.now(), eventType: 'x' })
          }),
          firstUse(async () => letters.init?.()),
          firstUse(async () => journal.init?.()),
        ]),
      ])
      const failures = started.flatMap((run) => (run.status === 'rejected' ? [String(run.reason)] : []))
      expect(failures, `round ${round + 1}`).toEqual([])
      // Only a wait for the turn past the lock timeout refuses a first use (tried again); never a deadlock.
      expect(
        refusals.filter((message) => !/its turn/.test(message)),
        `round ${round + 1}`,
      ).toEqual([])
      // The background builds end, and the schema is complete.
      const pool = newPool(2, { connectionTimeoutMillis: 10_000 })
      const tables = {
        store: postgresStore(pool, { table: options.table, createTable: false }),
        letters: postgresDeadLetterStore(pool, { table: options.deadLetterTable, createTable: false }),
        journal: postgresJournal(pool, { table: options.journalTable, createTable: false }),
      }
      const signal = () => AbortSignal.timeout(10_000)
      const checks = async () => [
        ...((await tables.store.health?.(signal())) ?? []),
        ...((await tables.letters.health?.(signal())) ?? []),
        ...((await tables.journal.health?.()) ?? []),
      ]
      let failing = (await checks()).filter((check) => !check.ok)
      for (let i = 0; i < 300 && failing.length > 0; i++) {
        await sleep(100)
        failing = (await checks()).filter((check) => !check.ok)
      }
      expect(failing, `round ${round + 1}`).toEqual([])
      expect(
        lines.filter((line) => /deadlock detected/.test(line)),
        `round ${round + 1}`,
      ).toEqual([])
    } finally {
      for (const { store, letters, journal } of receivers) {
        await store.shutdown?.()
        await letters.shutdown?.()
        await journal.shutdown?.()
      }
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
    }
  }
}, 180_000)

it('a migrate run gives back every turn it took, its index builds taking theirs again inside its session', async () => {
  const { options, drop } = await names()
  const silent = { warn() {}, error() {} }
  // One connection: the run's session, back in the pool once it resolves.
  const pool = newPool(1)
  try {
    await migrate(pool, { ...options, logger: silent })
    await admin.query(`DROP INDEX ${options.table}_expiry_idx, ${options.deadLetterTable}_code_idx`)
    expect((await migrate(pool, { ...options, logger: silent })).applied).toEqual(['012', '008'])
    const { rows } = await pool.query(
      `SELECT classid, objid FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`,
    )
    expect(rows).toEqual([])
    // A receiver's schema change on those tables takes its turn at once, with a lock_timeout of 1 ms.
    const store = postgresStore(newPool(2, { connectionTimeoutMillis: 10_000 }), {
      table: options.table,
      migrationLockTimeoutMs: 1,
      sweepIntervalMs: 0,
    })
    await admin.query(`ALTER TABLE ${options.table} DROP COLUMN body_digest`)
    await store.init?.()
    store.shutdown?.()
  } finally {
    await drop()
  }
})

it('while a migrate run holds the turns, receivers on complete tables start at once: nothing to change, no turn', async () => {
  const { options, drop } = await names()
  const pool = newPool(3)
  await migrate(pool, { ...options, logger: { warn() {}, error() {} } })
  await admin.query(`DROP INDEX ${options.table}_expiry_idx`)
  const reader = await newPool(1).connect()
  const receiver = newPool(3, { connectionTimeoutMillis: 10_000 })
  const parts = [
    postgresStore(receiver, { table: options.table, sweepIntervalMs: 0 }),
    postgresDeadLetterStore(receiver, { table: options.deadLetterTable, sweepIntervalMs: 0 }),
    postgresJournal(receiver, { table: options.journalTable, sweepIntervalMs: 0 }),
  ]
  try {
    // The run builds 012's index CONCURRENTLY, waiting for the reader's snapshot, holding every turn meanwhile.
    await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ')
    await reader.query(`SELECT count(*) FROM ${options.table}`)
    const readerPid = (await reader.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid
    let ran = false
    const run = migrate(pool, { ...options, logger: { warn() {}, error() {} } }).finally(() => {
      ran = true
    })
    // The run holds every turn once its build waits for the reader: the receivers start then, not after a fixed
    // wait (which, on a loaded machine, could end before the run took its turns and prove nothing).
    await vi.waitFor(
      async () => {
        const { rows } = await admin.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))',
          [readerPid],
        )
        expect(rows[0]?.n).toBeGreaterThan(0)
      },
      { timeout: 30_000, interval: 50 },
    )
    // Each init's CREATE ... IF NOT EXISTS (the dead letters' widening of 003 too) has nothing to do: it is not held.
    // A held one would wait for its turn (500 ms) and fail, or wait for the run, which waits for the reader.
    await Promise.all(parts.map((part) => part.init?.()))
    expect(ran, 'the run was still holding its turns').toBe(false)
    await reader.query('COMMIT')
    expect((await run).applied).toEqual(['012'])
  } finally {
    await reader.query('ROLLBACK').catch(() => {})
    reader.release()
    for (const part of parts) await part.shutdown?.()
    await drop()
  }
})
