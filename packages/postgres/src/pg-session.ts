import type { Pool, PoolClient } from 'pg'
import { poolDatabase } from './database.js'
import { checkOut, type HeldClient } from './held-client.js'
import { IN_FAILED_TRANSACTION, type LazyBinding, Rollback } from './transaction.js'

const noop = () => {}
const sqlState = (error: unknown) => (error as { code?: unknown } | null | undefined)?.code
const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)))

/** The client of one event's transaction: checked out of the pool at `db`'s first query, and `BEGIN` run on it. */
class Session {
  held: HeldClient | undefined
  /** The client once checked out. */
  checkedOut: Promise<HeldClient> | undefined
  /** The client once checked out and inside `BEGIN`. */
  ready: Promise<HeldClient> | undefined
  /** Whether `BEGIN` succeeded: queries then go straight to the client. */
  open = false
  /** Queries sent through `db` before its client was there and not passed on to it yet: they keep their order. */
  waiting = 0
  /** The last error (other than 25P02) a query through `db` failed with: what a handler may have caught. */
  lastError: Error | undefined
  /** Set once the transaction is over: its client may be serving someone else by then. */
  over = false
  #db: PoolClient | undefined

  constructor(readonly pool: Pool) {}

  get db(): PoolClient {
    this.#db ??= lazyClient(this)
    return this.#db
  }

  start(): Promise<HeldClient> {
    if (this.ready === undefined) {
      this.checkedOut = checkOut(this.pool)
      this.checkedOut.catch(noop)
      this.ready = this.checkedOut.then(async (held) => {
        this.held = held
        await held.client.query('BEGIN')
        this.open = true
        return held
      })
      this.ready.catch(noop)
    }
    return this.ready
  }

  noteError = (error: unknown) => {
    if (error instanceof Error && sqlState(error) !== IN_FAILED_TRANSACTION) this.lastError = error
  }
}

type Callback = (error: Error | null, result?: unknown) => void
type Submittable = { submit: unknown; handleError?: (error: Error) => void }
type Query = (...args: unknown[]) => unknown

/** Sends a query on the held client, noting the SQL error it may fail with. */
function send(session: Session, client: PoolClient, args: unknown[]): unknown {
  const query = client.query.bind(client) as Query
  const last = args[args.length - 1]
  if (typeof last === 'function') {
    const callback = last as Callback
    const noted: Callback = (error, result) => {
      if (error) session.noteError(error)
      callback(error, result)
    }
    return query(...args.slice(0, -1), noted)
  }
  const result = query(...args)
  if (result instanceof Promise) result.then(undefined, session.noteError)
  return result
}

/** `db.query`, in every form pg has (promise, callback, submittable), sent once the client is checked out. */
function lazyQuery(session: Session): Query {
  return (...args) => {
    const held = session.held
    if (session.open && held !== undefined && session.waiting === 0 && !session.over) {
      return send(session, held.client, args)
    }
    session.waiting++
    const acquired = session.over ? Promise.reject(usedAfterwards()) : session.start()
    const passOn = (now: HeldClient) => {
      session.waiting--
      return send(session, now.client, args)
    }
    const failed = (error: unknown) => {
      session.waiting--
      return asError(error)
    }
    const first = args[0] as Submittable | undefined
    if (typeof first?.submit === 'function') {
      // pg returns a submittable (pg-cursor, pg-query-stream) at once, and so does this.
      acquired.then(passOn, (error) => first.handleError?.(failed(error)))
      return first
    }
    const last = args[args.length - 1]
    if (typeof last === 'function') {
      acquired.then(passOn, (error) => (last as Callback)(failed(error)))
      return undefined
    }
    return acquired.then(passOn, (error) => {
      throw failed(error)
    })
  }
}

const usedAfterwards = () =>
  new Error("context.db was used after the event's handlers returned: its transaction is over and its client released")

const refuseRelease = () => {
  throw new Error('context.db belongs to the store, which releases it after the done marker: do not release it')
}

/**
 * `context.db`: a `PoolClient` whose client is checked out of the pool at its first query (not when `db` is read,
 * so `{ db }` in a handler's parameters takes no client). Until then only `query` and the escape helpers work.
 */
function lazyClient(session: Session): PoolClient {
  const query = lazyQuery(session)
  const prototype = (session.pool as unknown as { Client?: { prototype?: Record<string, unknown> } }).Client?.prototype
  return new Proxy(Object.create(prototype ?? null) as object, {
    get(_target, property) {
      if (property === 'query') return query
      if (property === 'release') return refuseRelease
      const client = session.held?.client
      if (client !== undefined) {
        const value: unknown = Reflect.get(client, property)
        return typeof value === 'function' ? value.bind(client) : value
      }
      // Pure functions in pg 8 (they call pg's utils), so they need no connection.
      if (property === 'escapeIdentifier' || property === 'escapeLiteral') return prototype?.[property]
      if (typeof property === 'symbol' || property === 'then' || property === 'toJSON') return undefined
      throw new Error(
        `context.db.${property} is there once db has sent a query: the store checks its client out of the pool at db's first query`,
      )
    },
  }) as PoolClient
}

/**
 * `pg`'s binding of the transaction engine, lazy: `context.db` checks a client out of the pool and opens the
 * transaction (`BEGIN`) at its first query, so handlers that never query it hold no client. A transaction without a
 * statement yet runs the done marker (`last`) alone on the pool: one statement commits as a transaction would.
 */
export function pgBinding(pool: Pool): LazyBinding<PoolClient> {
  const sessions = new WeakMap<PoolClient, Session>()
  const { query: run, session } = poolDatabase(pool)
  return {
    name: 'postgresStore',
    get poolSize() {
      return pool.options?.max ?? 10
    },
    run,
    session,
    lastError: (db) => sessions.get(db)?.lastError,

    query: (db, text, values) => db.query(text, values),

    async last(db, text, values) {
      const session = sessions.get(db)
      if (session?.ready === undefined) return pool.query(text, values)
      const held = await session.ready
      if (held.failure) throw held.failure
      return held.client.query(text, values)
    },

    async transaction(work) {
      const session = new Session(pool)
      sessions.set(session.db, session)
      // The client is destroyed after a failure, kept after a rollback the engine asked for (see Rollback).
      let failure: Error | undefined
      try {
        let result: Awaited<ReturnType<typeof work>>
        try {
          result = await work(session.db)
        } catch (error) {
          if (session.ready === undefined) throw error
          const held = await session.ready
          if (held.failure) throw held.failure
          await held.client.query('ROLLBACK')
          if (!(error instanceof Rollback)) failure = asError(error)
          throw error
        }
        if (session.ready !== undefined) {
          const held = await session.ready
          if (held.failure) throw held.failure
          await held.client.query('COMMIT')
        }
        return result
      } catch (error) {
        if (failure === undefined && !(error instanceof Rollback)) {
          failure = asError(error)
          const held = session.held
          if (held && !held.failure) await held.client.query('ROLLBACK').catch(noop)
        }
        throw error
      } finally {
        session.over = true
        // A client still arriving (a handler's query not awaited) is destroyed when it comes: its BEGIN is open.
        if (session.held) session.held.release(failure)
        else
          session.checkedOut?.then((late) => late.release(new Error('transaction over before its client came')), noop)
      }
    },
  }
}
