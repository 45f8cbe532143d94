import mysql from 'mysql2'
import type { Pool, PoolConnection } from 'mysql2/promise'

const noop = () => {}

// MySQL, unlike PostgreSQL, keeps a transaction going after one of its statements failed: only that statement is
// undone, unless the error rolled back the whole transaction (a deadlock, a lock wait timeout with
// innodb_rollback_on_timeout), after which the connection runs every statement in autocommit mode. A handler that
// caught such an error and went on would have its earlier writes lost and the done marker committed alone. So the
// session counts the statements of `context.db` that failed, and the event's transaction is refused unless each was
// inside a savepoint rolled back to (`SAVEPOINT s` ... `ROLLBACK TO SAVEPOINT s`), as PostgreSQL's rules have it.

// Names as the libraries make them: Drizzle's sp1, Knex's trx2, TypeORM's typeorm_1, Sequelize's `<uuid>`.
const SAVEPOINT = /^\s*SAVEPOINT\s+`?([\w-]+)`?\s*;?\s*$/i
const ROLLBACK_TO = /^\s*ROLLBACK\s+(?:WORK\s+)?TO\s+(?:SAVEPOINT\s+)?`?([\w-]+)`?\s*;?\s*$/i

/** The text of a statement in any form mysql2 takes: a string, or options with `sql`. */
export const textOf = (first: unknown) =>
  typeof first === 'string'
    ? first
    : typeof (first as { sql?: unknown })?.sql === 'string'
      ? (first as { sql: string }).sql
      : ''

/**
 * The statements of one transaction that failed and were not inside a savepoint rolled back to since, as
 * {@link StatementLog.note} is told of each statement.
 */
export class StatementLog {
  failed: Error[] = []
  /** Each open savepoint, with how many failures there were when it was made. */
  savepoints: { name: string; failures: number }[] = []

  /** Notes what a statement did to the transaction: a savepoint made or rolled back to, or a failure. */
  note(text: string, error?: unknown): void {
    if (error !== undefined) {
      this.failed.push(error instanceof Error ? error : new Error(String(error)))
      return
    }
    const made = SAVEPOINT.exec(text)
    if (made) {
      this.savepoints.push({ name: (made[1] as string).toLowerCase(), failures: this.failed.length })
      return
    }
    const back = ROLLBACK_TO.exec(text)
    if (back) {
      const name = (back[1] as string).toLowerCase()
      const at = this.savepoints.map((s) => s.name).lastIndexOf(name)
      if (at < 0) return
      // The savepoint stays (ROLLBACK TO keeps it); those made after it are gone.
      this.failed.length = (this.savepoints[at] as { failures: number }).failures
      this.savepoints.length = at + 1
    }
  }
}

/** The connection of one event's transaction: checked out of the pool at `db`'s first statement, then `START TRANSACTION`. */
export class Session extends StatementLog {
  connection: PoolConnection | undefined
  ready: Promise<PoolConnection> | undefined
  /** Set once the transaction is over: its connection may be serving someone else by then. */
  over = false
  /** Whether the connection must be destroyed rather than given back (its state is unknown). */
  broken = false
  readonly db: PoolConnection

  constructor(readonly pool: Pool) {
    super()
    this.db = lazyConnection(this)
  }

  start(): Promise<PoolConnection> {
    if (this.ready === undefined) {
      this.ready = this.pool.getConnection().then(async (connection) => {
        this.connection = connection
        try {
          await connection.query('START TRANSACTION')
        } catch (error) {
          this.broken = true
          throw error
        }
        return connection
      })
      this.ready.catch(noop)
    }
    return this.ready
  }

  /** Gives the connection back, or destroys it when its state is unknown; a late one is destroyed when it comes. */
  end(): void {
    this.over = true
    if (this.connection) {
      if (this.broken) this.connection.destroy()
      else this.connection.release()
    } else {
      this.ready?.then((late) => late.destroy(), noop)
    }
  }
}

type Statement = (...args: unknown[]) => Promise<unknown>

/** `db.query` and `db.execute`: sent once the connection is there, each failure noted. */
function statement(session: Session, method: 'query' | 'execute'): Statement {
  return async (...args) => {
    if (session.over) throw usedAfterwards()
    const connection = session.connection ?? (await session.start())
    const text = textOf(args[0])
    try {
      const result = await (connection[method] as Statement).apply(connection, args)
      session.note(text)
      return result
    } catch (error) {
      session.note(text, error)
      throw error
    }
  }
}

const usedAfterwards = () =>
  new Error(
    "context.db was used after the event's handlers returned: its transaction is over and its connection released",
  )

const refuse = (what: string) => () => {
  throw new Error(
    `context.db.${what}() is the store's: it commits (or rolls back) the event's transaction with the done marker and releases the connection; use SAVEPOINT and ROLLBACK TO SAVEPOINT inside it`,
  )
}

// Pure helpers of mysql2 (sqlstring), which need no connection.
const helpers: Record<string, unknown> = { escape: mysql.escape, escapeId: mysql.escapeId, format: mysql.format }

/**
 * `context.db`: a mysql2 `PoolConnection` checked out of the pool at its first statement (not when `db` is read, so
 * `{ db }` in a handler's parameters takes no connection). Until then only `query`, `execute` and the escape helpers
 * are there. Transaction control (`beginTransaction`, `commit`, `rollback`) and `release` belong to the store.
 */
function lazyConnection(session: Session): PoolConnection {
  const own: Record<string, unknown> = {
    query: statement(session, 'query'),
    execute: statement(session, 'execute'),
    release: refuse('release'),
    destroy: refuse('destroy'),
    end: refuse('end'),
    beginTransaction: refuse('beginTransaction'),
    commit: refuse('commit'),
    rollback: refuse('rollback'),
  }
  return new Proxy(Object.create(null) as object, {
    get(_target, property) {
      if (typeof property === 'string' && property in own) return own[property]
      const connection = session.connection
      if (connection !== undefined) {
        const value: unknown = Reflect.get(connection, property)
        return typeof value === 'function' ? value.bind(connection) : value
      }
      if (typeof property === 'string' && property in helpers) return helpers[property]
      if (typeof property === 'symbol' || property === 'then' || property === 'toJSON') return undefined
      throw new Error(
        `context.db.${property} is there once db has sent a statement: the store checks its connection out of the pool at db's first statement`,
      )
    },
  }) as PoolConnection
}
