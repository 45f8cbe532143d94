import { check } from '@payhooks/core/validations'
import type { Pool } from 'pg'
import { described, hasMethods, isPgPool, refuse, UnusableLibraryError } from './binding-checks.js'
import { poolDatabase } from './database.js'
import { bindPostgresStore } from './engine.js'
import { answersRows } from './statement-kind.js'
import type { BoundPostgresStore, BoundPostgresStoreOptions, PostgresRows } from './types.js'

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

/** Options of `prismaStore`: those of `postgresStore`, the pool's share, and the receiver's `maxRunMs`. */
export interface PrismaStoreOptions extends BoundPostgresStoreOptions {
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
  'a PrismaClient on PostgreSQL with $transaction and raw queries (Prisma 7 on @prisma/adapter-pg): prismaStore(new PrismaClient({ adapter: new PrismaPg({ connectionString }) }))'
const MAX_TIMER_MS = 2_147_483_647
/** The done marker and the commit after the handlers: Prisma's timeout is `maxRunMs` and this. */
const MARKER_MS = 60_000

/** What Prisma keeps of the adapter it was given (not public: read when there, for the pool's size). */
interface EngineConfig {
  activeProvider?: string
  adapter?: { config?: { max?: number }; externalPool?: unknown }
}

/** A Prisma raw query's error with its SQLSTATE as `code` (Prisma's own is P2010), which the store reads. */
function withSqlState(error: unknown): unknown {
  const meta = (error as { meta?: { code?: unknown; driverAdapterError?: { cause?: Record<string, unknown> } } }).meta
  const cause = meta?.driverAdapterError?.cause
  const code = cause?.originalCode ?? meta?.code
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return error
  const message = typeof cause?.originalMessage === 'string' ? cause.originalMessage : (error as Error).message
  return Object.assign(new Error(message, { cause: error }), { code })
}

/** Rows as `pg` gives them: Prisma answers int8 as bigint, pg as a string. */
function pgRows(rows: Record<string, unknown>[]): Record<string, unknown>[] {
  for (const row of rows) {
    for (const key in row) if (typeof row[key] === 'bigint') row[key] = String(row[key])
  }
  return rows
}

/** `text` on `on` (the client, or its interactive transaction's): `$queryRaw` when it answers rows, else `$executeRaw`. */
async function raw(on: RawClient, text: string, values: unknown[]): Promise<PostgresRows> {
  try {
    if (!answersRows(text)) return { rows: [], rowCount: await on.$executeRawUnsafe(text, ...values) }
    const rows = pgRows((await on.$queryRawUnsafe(text, ...values)) as Record<string, unknown>[])
    return { rows, rowCount: rows.length }
  } catch (error) {
    throw withSqlState(error)
  }
}

/**
 * A `postgresStore` whose handlers write through Prisma: `context.db` is the client of the event's interactive
 * transaction (`prisma.$transaction(async (tx) => ...)`), typed by your schema, and what the handlers write with it
 * (its models, `tx.$executeRaw`) commits together with the event's done marker, or not at all. The transaction is
 * opened before the handlers run, with Prisma's `timeout` set from `maxRunMs` (see {@link PrismaStoreOptions}); catch an
 * SQL error inside a nested `tx.$transaction()` (a savepoint), or let it propagate. Claims and renewals run on the
 * client outside it, or on your `pg.Pool` given as `new PrismaPg(pool)`. `maxConcurrentEvents` is the `max` of
 * `PrismaPg`'s pool less one (9 when it does not tell).
 *
 * @example
 * import { createWebhooks } from '@payhooks/core'
 * import { prismaStore } from '@payhooks/postgres/prisma'
 * import { PrismaPg } from '@prisma/adapter-pg'
 * import { PrismaClient } from './generated/prisma/client.js'
 *
 * const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: process.env.DATABASE_URL, max: 10 }) })
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
): BoundPostgresStore<PrismaTransaction<P>> {
  const where = 'prismaStore'
  if (isPgPool(prisma)) refuse(where, prisma, NEEDS)
  // Prisma's classes have minified names: said in words.
  if (hasMethods(prisma, '$queryRawUnsafe') && !hasMethods(prisma, '$connect')) {
    throw new TypeError(
      `${where}: got the client of a Prisma interactive transaction (the tx of $transaction(async (tx) => ...)); it needs ${NEEDS}, the client itself`,
    )
  }
  const missing = ['$transaction', '$queryRawUnsafe', '$executeRawUnsafe'].filter((name) => !hasMethods(prisma, name))
  if (missing.length > 0) {
    const got = hasMethods(prisma, '$connect') ? `a PrismaClient without ${missing.join(' or ')}` : described(prisma)
    throw new TypeError(`${where}: got ${got}; it needs ${NEEDS}`)
  }
  const engine = (prisma as { _engineConfig?: EngineConfig })._engineConfig
  const provider = engine?.activeProvider ?? (prisma as { _activeProvider?: unknown })._activeProvider
  if (typeof provider === 'string' && provider !== 'postgresql') {
    throw new TypeError(`${where}: got a PrismaClient for ${provider}; it needs ${NEEDS}`)
  }
  const maxRunMs = options.maxRunMs ?? 900_000
  check(maxRunMs > 0, where, 'maxRunMs', "be positive (the receiver's maxRunMs), or Infinity")
  const maxWait = options.maxWaitMs ?? 2000
  check(maxWait > 0 && maxWait <= MAX_TIMER_MS, where, 'maxWaitMs', 'be positive')
  const transactionOptions = { timeout: Math.min(maxRunMs + MARKER_MS, MAX_TIMER_MS), maxWait }
  // new PrismaPg(pool): the app's own pg.Pool, for the store's statements outside the transaction and its index builds.
  const external = engine?.adapter?.externalPool
  const pool = isPgPool(external) ? (external as Pool) : undefined
  type Tx = PrismaTransaction<P>
  return bindPostgresStore<Tx>(
    {
      name: where,
      poolSize: pool?.options?.max ?? engine?.adapter?.config?.max ?? 10,
      transaction: (work) =>
        (prisma as unknown as Transactions).$transaction((tx) => work(tx as Tx), transactionOptions) as Promise<never>,
      query: (tx, text, values) => raw(tx as unknown as RawClient, text, values),
      // Claims and renewals: on that pool when there is one, without Prisma's client in between.
      run: pool ? poolDatabase(pool).query : (text, values) => raw(prisma, text, values),
      ...(pool ? { session: poolDatabase(pool).session } : {}),
      check() {
        if ((pool as { ended?: boolean } | undefined)?.ended) {
          throw new UnusableLibraryError(
            `${where}: the pg.Pool given to PrismaPg was ended (pool.end()); it needs a live pool`,
          )
        }
      },
    },
    options,
  )
}
