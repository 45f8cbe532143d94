import type { Pool, PoolClient } from 'pg'
import type { Run } from './database.js'
import { checkOut } from './held-client.js'
import type { Logger } from './maintenance.js'
import { giveTurn, heldBy, holderOf, tryTurn } from './turn.js'

// One session for a whole migrate() run, holding the turn at schema changes of each table it changes (turn.ts: a
// session-level advisory lock, as CREATE INDEX CONCURRENTLY runs outside any transaction; the instances' own changes
// and index builds take the same turns): two runs at once took turns statement by statement, and one's CREATE INDEX
// CONCURRENTLY, waiting for every transaction older than it, deadlocked with the other's ALTER TABLE waiting for the
// index build's lock. While a statement of the run waits for another session, the run says which, by pid, from a
// second connection.

/** How often a run waiting for its turn tries again. */
const TURN_POLL_MS = 200
/** A wait is first reported after this long, then again each {@link REPORT_EVERY_MS} or when who blocks changes. */
const FIRST_REPORT_MS = 1000
const REPORT_EVERY_MS = 10_000

/** The sessions another one waits for: pid, state, and how long ago its current (or last) query started. */
const BLOCKERS = `SELECT b.pid, coalesce(b.state, 'unknown') AS state,
  coalesce(extract(epoch FROM clock_timestamp() - coalesce(b.query_start, b.xact_start)), 0)::float8 AS query_s
FROM unnest(pg_blocking_pids($1)) AS blocker(pid) JOIN pg_stat_activity b ON b.pid = blocker.pid
ORDER BY b.query_start LIMIT 3`

/** A migrate run's own session: its statements, the turns it holds, and what it tells while it waits. */
export interface MigrateSession {
  /** The session as a pool: every query and every checkout is this one connection, in turn. */
  readonly db: Pool
  /** Runs `work` on the session, saying (from another connection) which sessions it waits for, when it waits. */
  watch<T>(what: string, relation: string, work: () => Promise<T>): Promise<T>
  /** Gives the turns back and the connection to the pool. */
  release(): Promise<void>
}

const say = (logger: Logger, line: string) => (logger.warn ?? logger.error).call(logger, line)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** `client` lent as a pool whose checkouts are all `client` itself, released by nobody but the run. */
function pinned(client: PoolClient): Pool {
  const query = (...args: unknown[]) => (client.query as (...a: unknown[]) => unknown)(...args)
  const lent = {
    query,
    on: (event: string, listener: (...a: unknown[]) => void) => client.on(event as 'error', listener),
    removeListener: (event: string, listener: (...a: unknown[]) => void) =>
      client.removeListener(event as 'error', listener),
    release() {},
  }
  return { query, connect: async () => lent } as unknown as Pool
}

/** Whether `pool` has a connection to spare beside the run's (a pool of one never does). */
function spare(pool: Pool): boolean {
  const max = pool.options?.max ?? 10
  return pool.idleCount > 0 || pool.totalCount < max
}

/**
 * Opens the session of a migrate run on a connection of `pool` and takes the turn of each of `tables` (all or none,
 * tried again every 200 ms while another run, an instance's schema change or an index build holds one, so a waiting
 * run never holds a snapshot an index build holding it would wait for), logging who holds it.
 */
export async function openSession(pool: Pool, tables: string[], logger: Logger): Promise<MigrateSession> {
  const held = await checkOut(pool)
  const { client } = held
  const turns = { query: ((text, values) => client.query(text, values)) as Run }
  const polls = new Set<Promise<unknown>>()
  let pid = 0
  const keys = [...new Set(tables)].sort()
  const unlock = async (taken: string[]) => {
    for (const key of taken) await giveTurn(turns, key)
  }
  try {
    pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid ?? 0
    const started = Date.now()
    let reported = 0
    for (;;) {
      const taken: string[] = []
      let busy: string | undefined
      for (const key of keys) {
        if (!(await tryTurn(turns, key))) {
          busy = key
          break
        }
        taken.push(key)
      }
      if (busy === undefined) break
      await unlock(taken)
      const waited = Date.now() - started
      if (waited >= FIRST_REPORT_MS && Date.now() - reported >= REPORT_EVERY_MS) {
        reported = Date.now()
        const holder = await holderOf(turns, busy)
        say(
          logger,
          `[payhooks] migrate: waiting for its turn at the schema changes of ${busy}${heldBy(holder)} (${Math.round(waited / 1000)} s so far)`,
        )
      }
      await sleep(TURN_POLL_MS)
    }
  } catch (error) {
    held.release(error instanceof Error ? error : new Error(String(error)))
    throw error
  }

  /** One look at what the session waits for; a line when it changed or a while passed since the last. */
  let lastLine = ''
  let lastAt = 0
  const look = async (what: string, relation: string, active: () => boolean) => {
    if (!spare(pool)) return
    const { rows } = await pool.query<{ pid: number; state: string; query_s: number }>(BLOCKERS, [pid])
    if (rows.length === 0 || !active()) return
    const who = rows.map((row) => `pid ${row.pid} (${row.state}; query started ${Math.round(row.query_s)} s ago)`)
    const line = `[payhooks] migrate: ${what} is waiting for a lock on ${relation} held by ${who.join(', ')}; it goes on once that transaction ends`
    const same = line.replace(/\d+ s ago/g, '') === lastLine.replace(/\d+ s ago/g, '')
    if (same && Date.now() - lastAt < REPORT_EVERY_MS) return
    lastLine = line
    lastAt = Date.now()
    say(logger, line)
  }

  return {
    db: pinned(client),
    async watch(what, relation, work) {
      let active = true
      const timer = setInterval(() => {
        const poll = look(what, relation, () => active).catch(() => {})
        polls.add(poll)
        poll.finally(() => polls.delete(poll))
      }, FIRST_REPORT_MS)
      try {
        return await work()
      } finally {
        active = false
        clearInterval(timer)
      }
    },
    async release() {
      let failure: Error | undefined
      try {
        await unlock(keys)
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error))
      }
      held.release(failure ?? held.failure)
      // A look still running gets its connection now that the run's is back: it ends before migrate() resolves.
      await Promise.all(polls)
    },
  }
}
