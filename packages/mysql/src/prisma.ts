import { check } from '@payhooks/core/validations'
import { bindMysqlStore } from './engine.js'
import { hasMethods, libraryPool, refuse } from './library-pool.js'
import type { BoundMysqlStore, BoundMysqlStoreOptions } from './types.js'
import type { Note } from './watch.js'

/** Prisma's interactive transaction's client of the client `P`: what its `$transaction(fn)` hands `fn`. */
export type PrismaTransaction<P> = P extends {
  $transaction(fn: (tx: infer T) => Promise<unknown>, ...rest: never[]): unknown
}
  ? T
  : never

// biome-ignore lint/suspicious/noExplicitAny: Prisma's raw calls take values of any type
type Values = any[]

/** What the store needs of a Prisma client, and of its interactive transaction's client (without `$transaction`). */
interface RawClient {
  $queryRawUnsafe(query: string, ...values: Values): PromiseLike<unknown>
  $executeRawUnsafe(query: string, ...values: Values): PromiseLike<number>
}

/** A Prisma client: raw statements and interactive transactions with their options. */
export interface PrismaClientLike extends RawClient {
  /** Both of Prisma's: `$transaction([...])` and `$transaction(async (tx) => ..., options)`. */
  $transaction(...args: never[]): PromiseLike<unknown>
  /** The client's own (its interactive transaction's client has none). */
  $connect(): PromiseLike<void>
}

/** The overload of Prisma's `$transaction` the store calls: an interactive transaction. */
interface Transactions {
  $transaction(fn: (tx: unknown) => Promise<unknown>, options: { maxWait: number; timeout: number }): Promise<unknown>
}

/** Options of `prismaStore`: those of `mysqlStore`, the pool's share, and the receiver's `maxRunMs`. */
export interface PrismaStoreOptions extends BoundMysqlStoreOptions {
  /**
   * The receiver's `maxRunMs` (give both the same): each event's interactive transaction gets Prisma's `timeout` of
   * this plus a minute for the done marker and the commit (Prisma's own default, 5 s, would roll back any event
   * whose handlers take longer). A handler still running past it keeps its event (its claim is renewed), but the
   * transaction is rolled back, so nothing it wrote commits and the event runs again once it settles.
   * @default 900_000 (createWebhooks' default maxRunMs)
   */
  maxRunMs?: number
  /**
   * How long an event waits for Prisma to start its interactive transaction (Prisma's `maxWait`): a connection of
   * the pool, once the event is claimed. Past it the event fails, its claim released for the service's retry.
   * @default 2000 (Prisma's)
   */
  maxWaitMs?: number
}

const NEEDS =
  'a PrismaClient on MySQL or MariaDB with $transaction and raw queries (Prisma 7 on @prisma/adapter-mariadb): prismaStore(new PrismaClient({ adapter: new PrismaMariaDb(process.env.MYSQL_URL) }))'
const MAX_TIMER_MS = 2_147_483_647
/** The done marker and the commit after the handlers: Prisma's timeout is `maxRunMs` and this. */
const MARKER_MS = 60_000
/** Upkeep on one connection (tables made under a short lock_wait_timeout, a fence's marker): at most this long. */
const UPKEEP_MS = 300_000

/** A Prisma raw query's error with the server's `errno` (Prisma's own code is P2010), which the store reads. */
function withErrno(error: unknown): unknown {
  const meta = (error as { meta?: { code?: unknown; driverAdapterError?: { cause?: Record<string, unknown> } } }).meta
  const cause = meta?.driverAdapterError?.cause
  const code = cause?.originalCode ?? meta?.code
  if (typeof code !== 'string' || !/^[0-9]+$/.test(code)) return error
  const message = typeof cause?.originalMessage === 'string' ? cause.originalMessage : (error as Error).message
  return Object.assign(new Error(message, { cause: error }), { errno: Number(code) })
}

/** `text` on `on`: rows for a read (BIGINTs as numbers, as mysql2 gives them), else mysql2's header's `affectedRows`. */
async function raw(on: RawClient, text: string, values: unknown[]): Promise<unknown> {
  try {
    if (!/^\s*(SELECT|SHOW|WITH|\()/i.test(text)) return { affectedRows: await on.$executeRawUnsafe(text, ...values) }
    const rows = (await on.$queryRawUnsafe(text, ...values)) as Record<string, unknown>[]
    for (const row of rows) {
      for (const key in row) if (typeof row[key] === 'bigint') row[key] = Number(row[key])
    }
    return rows
  } catch (error) {
    throw withErrno(error)
  }
}

/** Who is told of the statements of one event's transaction (set by the engine's `watch`). */
interface Watcher {
  note?: Note
  savepoints: number
}

/** Notes how `answer` (a Prisma promise) ends, under `text`, and hands it back as it is. */
function noted(watcher: Watcher, text: string, answer: unknown): unknown {
  const promise = answer as PromiseLike<unknown> | null | undefined
  if (promise && typeof promise.then === 'function') {
    promise.then(
      () => watcher.note?.(text),
      (error: unknown) => watcher.note?.(text, error),
    )
  }
  return answer
}

/**
 * The interactive transaction's client as the handlers get it: each raw statement and each model call is noted as
 * it ends (MySQL goes on after a failed statement, so a caught failure must fail the event), and a nested
 * `$transaction` is a savepoint that a failure inside it rolls back to.
 */
function watched<T extends object>(tx: T, watcher: Watcher): T {
  const delegates = new Map<PropertyKey, unknown>()
  return new Proxy(tx, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof key !== 'string') return value
      if (key === '$transaction' && typeof value === 'function') {
        return (fn: (inner: unknown) => Promise<unknown>, ...rest: unknown[]) => {
          const name = `payhooks_prisma_${++watcher.savepoints}`
          watcher.note?.(`SAVEPOINT ${name}`)
          return (value as (...args: unknown[]) => Promise<unknown>).call(
            target,
            (inner: object) =>
              fn(watched(inner, watcher)).catch((error: unknown) => {
                watcher.note?.(`ROLLBACK TO SAVEPOINT ${name}`)
                throw error
              }),
            ...rest,
          )
        }
      }
      if (typeof value === 'function') {
        if (!key.startsWith('$')) return value
        return (...args: unknown[]) =>
          noted(watcher, `prisma.${key}`, (value as (...args: unknown[]) => unknown).apply(target, args))
      }
      if (key.startsWith('$') || key.startsWith('_') || value === null || typeof value !== 'object') return value
      // A model's delegate (tx.settlement): its calls noted.
      if (!delegates.has(key)) {
        delegates.set(
          key,
          new Proxy(value, {
            get(model, method, modelReceiver) {
              const call = Reflect.get(model, method, modelReceiver)
              if (typeof call !== 'function' || typeof method !== 'string') return call
              return (...args: unknown[]) =>
                noted(watcher, `prisma.${key}.${method}`, (call as (...args: unknown[]) => unknown).apply(model, args))
            },
          }),
        )
      }
      return delegates.get(key)
    },
  })
}

/**
 * A `mysqlStore` whose handlers write through Prisma on MySQL or MariaDB: `context.db` is the client of the event's
 * interactive transaction (`prisma.$transaction(async (tx) => ...)`), typed by your schema, and what the handlers
 * write with it (its models, `tx.$executeRaw`) commits together with the event's done marker, or not at all. The
 * transaction is opened before the handlers run, with Prisma's `timeout` set from `maxRunMs` (see
 * {@link PrismaStoreOptions}). MySQL goes on after a failed statement: a failure the handlers catch fails the event
 * (nothing commits) unless it was inside a nested `tx.$transaction()` (a savepoint) that rejected. Claims and renewals
 * run on the client outside the transaction. `maxConcurrentEvents` is 9 unless given (the adapter does not tell its
 * pool's `connectionLimit`: give it that less one).
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { prismaStore } from '@payhooks/mysql/prisma'
 * import { PrismaMariaDb } from '@prisma/adapter-mariadb'
 * import { PrismaClient } from './generated/prisma/client.js'
 *
 * const prisma = new PrismaClient({ adapter: new PrismaMariaDb(process.env.MYSQL_URL!) })
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: prismaStore(prisma) })
 * webhooks.on('transaction_settled', async (event, { db: tx }) => {
 *   await tx.settlement.create({
 *     data: { transactionId: event.data.transaction_id, amount: event.data.settlement_amount },
 *   })
 * })
 */
export function prismaStore<P extends PrismaClientLike>(
  prisma: P,
  options: PrismaStoreOptions = {},
): BoundMysqlStore<PrismaTransaction<P>> {
  const where = 'prismaStore'
  if (hasMethods(prisma, '$queryRawUnsafe') && !hasMethods(prisma, '$connect')) {
    throw new TypeError(
      `${where}: got the client of a Prisma interactive transaction (the tx of $transaction(async (tx) => ...)); it needs ${NEEDS}, the client itself`,
    )
  }
  const missing = ['$transaction', '$queryRawUnsafe', '$executeRawUnsafe'].filter((name) => !hasMethods(prisma, name))
  if (missing.length > 0) {
    if (!hasMethods(prisma, '$connect')) refuse(where, prisma, NEEDS)
    throw new TypeError(`${where}: got a PrismaClient without ${missing.join(' or ')}; it needs ${NEEDS}`)
  }
  const engine = (prisma as { _engineConfig?: { activeProvider?: string } })._engineConfig
  const provider = engine?.activeProvider ?? (prisma as { _activeProvider?: unknown })._activeProvider
  if (typeof provider === 'string' && provider !== 'mysql') {
    throw new TypeError(`${where}: got a PrismaClient for ${provider}; it needs ${NEEDS}`)
  }
  const maxRunMs = options.maxRunMs ?? 900_000
  check(maxRunMs > 0, where, 'maxRunMs', "be positive (the receiver's maxRunMs), or Infinity")
  const maxWait = options.maxWaitMs ?? 2000
  check(maxWait > 0 && maxWait <= MAX_TIMER_MS, where, 'maxWaitMs', 'be positive')
  const transactionOptions = { timeout: Math.min(maxRunMs + MARKER_MS, MAX_TIMER_MS), maxWait }
  const transactions = prisma as unknown as Transactions
  const watchers = new WeakMap<object, Watcher>()
  // Upkeep that needs one connection runs in an interactive transaction of its own: START TRANSACTION and DDL
  // commit implicitly on MySQL, so its statements run as on a plain connection.
  const pool = libraryPool(
    () =>
      new Promise((resolve, reject) => {
        transactions
          .$transaction(
            (tx) =>
              new Promise<void>((done) => {
                resolve({
                  run: (text, values) => raw(tx as RawClient, text, values),
                  release: () => done(),
                })
              }),
            { timeout: UPKEEP_MS, maxWait },
          )
          .catch(reject)
      }),
    { closed: () => false, size: 10 },
  )
  // Statements outside a transaction: on the client, without an interactive transaction around each.
  ;(pool as unknown as { query: unknown }).query = async (text: string, values: unknown[] = []) => [
    await raw(prisma, text, values),
    [],
  ]
  type Tx = PrismaTransaction<P>
  return bindMysqlStore<Tx>(
    {
      name: where,
      pool,
      transaction: (work) =>
        transactions.$transaction((tx) => {
          const watcher: Watcher = { savepoints: 0 }
          const db = watched(tx as object, watcher)
          watchers.set(db, watcher)
          return work(db as Tx)
        }, transactionOptions) as Promise<never>,
      query: (tx, text, values) => raw(tx as unknown as RawClient, text, values),
      watch(tx, note) {
        const watcher = watchers.get(tx as object)
        if (watcher) watcher.note = note
        return () => {
          if (watcher) watcher.note = undefined
        }
      },
    },
    options,
  )
}
