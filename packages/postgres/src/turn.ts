import type { Run } from './database.js'

// Every schema change of a table takes the table's turn, so they run one at a time: a migrate() run (holding the
// turns of its tables for the whole run), an instance's CREATE or ALTER on first use, and every CREATE INDEX
// CONCURRENTLY. A concurrent build waits for every transaction older than it: one of those waiting for the build's
// table lock (an ALTER, or a CREATE INDEX inside a transaction) deadlocked with it. Nobody waits for a turn inside a
// statement either (that statement's snapshot would hold up the build holding the turn): a turn is tried, and tried
// again a little later.

/** The first key of a table's turn (a two-key advisory lock). */
const TURN = 'payhooks:migrate'
/** Held with the turn by a change in a transaction, bounded by its own lock_timeout: others wait for it, however long. */
const CHANGE = 'payhooks:change'
/** How often a change in a transaction tries again for the turn. */
const POLL_MS = 50

/** The second key: the table's name, qualified by the current schema when it is not, so both spellings meet. */
const KEY = `hashtext(CASE WHEN strpos($2, '.') > 0 THEN $2 ELSE coalesce(current_schema(), '') || '.' || $2 END)`
const TRY = `SELECT pg_try_advisory_lock(hashtext($1), ${KEY}) AS ok`
const GIVE = `SELECT pg_advisory_unlock(hashtext($1), ${KEY}) AS ok`
// CASE keeps the order: the marker only once the turn is taken (`IS NOT NULL`: an `OR true` is folded away, unrun).
const TRY_IN_TRANSACTION = `SELECT CASE WHEN pg_try_advisory_xact_lock(hashtext($1), ${KEY})
  THEN pg_try_advisory_xact_lock(hashtext($3), ${KEY}) IS NOT NULL ELSE false END AS ok`
/** Who holds the turn, and whether as a change in a transaction (holding the marker too). */
const HOLDER = `SELECT t.pid, EXISTS (SELECT 1 FROM pg_locks c WHERE c.locktype = 'advisory' AND c.granted
  AND c.pid = t.pid AND c.database = t.database AND c.objsubid = 2 AND c.objid = t.objid
  AND c.classid::bigint = (hashtext($3)::bigint & 4294967295)) AS change
FROM pg_locks t WHERE t.locktype = 'advisory' AND t.granted AND t.objsubid = 2
  AND t.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND t.classid::bigint = (hashtext($1)::bigint & 4294967295) AND t.objid::bigint = (${KEY}::bigint & 4294967295)
LIMIT 1`

/** Where a turn's statements run: one session (a pinned client, or a library's connection of its own). */
export interface Queryable {
  query: Run
}

/** A table's turn not taken in time: what waited, on which table, and the session holding it. */
export class TurnWaitError extends Error {
  constructor(
    readonly what: string,
    readonly relation: string,
    readonly holder: Holder | undefined,
  ) {
    super(`${what} waited too long for its turn at the schema changes of ${relation}${heldBy(holder)}`)
    this.name = 'TurnWaitError'
  }
}

/** The session holding a table's turn, and whether as a change in a transaction (else a migrate run or a build). */
export interface Holder {
  pid: number
  change: boolean
}

/** `, taken by pid N (what it is)` for messages; nothing when the holder was gone by the time it was looked up. */
export function heldBy(holder: Holder | undefined): string {
  if (holder === undefined) return ''
  return `, taken by pid ${holder.pid} (${holder.change ? "another instance's schema change" : 'a migrate run or an index build'})`
}

/**
 * Takes the turn of `table` for the session of `client` (a session advisory lock, as a concurrent index build runs
 * outside a transaction), or answers false at once. Re-entrant: a session holding it takes it again, and gives it
 * back as many times ({@link giveTurn}).
 */
export async function tryTurn(client: Queryable, table: string): Promise<boolean> {
  return (await client.query<{ ok: boolean }>(TRY, [TURN, table])).rows[0]?.ok === true
}

/** Gives back one taking of the turn of `table` by the session of `client`. */
export async function giveTurn(client: Queryable, table: string): Promise<void> {
  await client.query(GIVE, [TURN, table])
}

/** The session holding the turn of `table`, and whether as a change in a transaction; undefined when it is free. */
export async function holderOf(client: Queryable, table: string): Promise<Holder | undefined> {
  return (await client.query<Holder>(HOLDER, [TURN, table, CHANGE])).rows[0]
}

/**
 * Waits inside the open transaction of `client` for the turn of `table`, as a change in a transaction (for a library
 * lending no connection of its own, where the turn cannot be tried between transactions).
 */
export async function takeTurnInTransaction(client: Queryable, table: string): Promise<void> {
  // As text: Prisma's raw queries cannot read a column of type void.
  await client.query(
    `SELECT pg_advisory_xact_lock(hashtext($1), ${KEY})::text, pg_advisory_xact_lock(hashtext($3), ${KEY})::text`,
    [TURN, table, CHANGE],
  )
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Options of {@link beginWithTurn}. */
export interface TurnWait {
  /** What waits, for the error: `migration 004`. */
  what: string
  /**
   * How long to wait while a migrate run or an index build holds the turn (another instance's change in a transaction
   * is waited for as long as it takes: its own lock_timeout bounds it); then a {@link TurnWaitError}.
   */
  boundMs: number
  /**
   * Tried once, outside a transaction, once a migrate run or an index build is found holding the turn: true when it
   * did what the change was for without the turn, which then is not waited for.
   */
  meanwhile?: () => Promise<boolean>
}

/**
 * Opens a transaction on `client` holding the turn of `table` (a transaction advisory lock, given back at its end;
 * taken again inside a migrate run's own session, which holds it). Between tries no transaction is open, so a
 * concurrent build holding the turn never waits for this one. Resolves `'taken'` inside the transaction, or
 * `'done'` (no transaction open) when {@link TurnWait.meanwhile} did the work.
 */
export async function beginWithTurn(client: Queryable, table: string, wait: TurnWait): Promise<'taken' | 'done'> {
  let behind = 0
  let last = Date.now()
  let tried = false
  /** The holder seen at the last try when it was a run or a build: a change ending (or starting) can look like one. */
  let seen: number | undefined
  for (;;) {
    await client.query('BEGIN')
    const taken = (await client.query<{ ok: boolean }>(TRY_IN_TRANSACTION, [TURN, table, CHANGE])).rows[0]?.ok
    if (taken === true) return 'taken'
    await client.query('ROLLBACK')
    const holder = await holderOf(client, table)
    const now = Date.now()
    const long = holder !== undefined && !holder.change ? holder.pid : undefined
    if (long !== undefined && long === seen) {
      behind += now - last
      if (!tried && wait.meanwhile) {
        tried = true
        if (await wait.meanwhile()) return 'done'
      }
      if (behind >= wait.boundMs) throw new TurnWaitError(wait.what, table, holder)
    }
    seen = long
    last = now
    await sleep(POLL_MS)
  }
}
