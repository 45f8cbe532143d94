import type {
  ClaimResult,
  HealthCheck,
  HeldOrderingKey,
  OrderingPosition,
  TransactionOutcome,
  WebhookStore,
} from '@payhooks/core'
import type { Pool, PoolConnection } from 'mysql2/promise'

/** Options of `mysqlStore`. */
export interface MysqlStoreOptions {
  /**
   * The store's table, optionally database-qualified (`webhooks.events`): letters, digits and `_` only, at most 56
   * characters (room for the `_fences` table beside it). Give each receiver fleet its own; the store owns every row.
   * @default 'payhooks_events'
   */
  table?: string
  /**
   * How long a done marker is kept. At least the service's 72-hour retry window, so every retry of a handled event
   * is recognised. The receiver's `maxEventAgeMs` follows it.
   * @default 262_800_000 (73 hours)
   */
  retentionMs?: number
  /**
   * Whether `init()` creates the tables when they are missing (`CREATE TABLE IF NOT EXISTS`, under a short
   * `lock_wait_timeout`). Set false when migrations create them (`migrate(pool)`, `payhooks migrate --mysql URL`, or
   * the files of `sql/`) and the receiver's user may not create tables: `init()` then only checks they can be read.
   * @default true
   */
  createTable?: boolean
  /**
   * How often the store deletes rows past their expiry (done markers older than `retentionMs`, claims whose lease
   * ran out, fences past their keep), in batches of `sweepBatch`. 0 turns it off: call `store.sweep()` yourself.
   * @default 3_600_000 (hourly)
   */
  sweepIntervalMs?: number
  /**
   * Rows deleted per statement of a sweep, oldest first by the expiry index, each batch a short transaction of its
   * own (READ COMMITTED, so it takes no gap locks that would hold up claims), until none is left.
   * @default 5000
   */
  sweepBatch?: number
  /**
   * How long, in milliseconds, a schema change `init()` makes may wait for its table's metadata lock (the session's
   * `lock_wait_timeout`, in whole seconds, at least 1): a DDL waiting behind a long transaction queues every
   * statement on that table behind it, so it gives up instead and `init()` is tried again at the next delivery.
   * @default 1000
   */
  migrationLockTimeoutMs?: number
  /**
   * Where a failed background sweep is logged (one line, `warn` else `error`).
   * @default console
   */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/** What `mysqlStore` adds to the handler context: the transaction the done marker commits in. */
export interface MysqlHandlerContext {
  /**
   * The mysql2 `PoolConnection` of this event's transaction: write with it, and the writes commit together with the
   * event's done marker, or not at all. The connection is checked out of the pool and the transaction started at its
   * first statement; until then only `query`, `execute` and the escape helpers are there. Handlers of one event share
   * it. Do not commit, roll back or `release()` it, nor use it once the handler returned. An SQL error a handler
   * catches fails the event (`transaction_aborted`), as MySQL may have rolled the transaction back: catch inside a
   * `SAVEPOINT` and `ROLLBACK TO SAVEPOINT` it.
   */
  readonly db: PoolConnection
}

/** The store `mysqlStore` returns: a {@link WebhookStore} whose handlers get `context.db`. */
export interface MysqlStore extends WebhookStore<MysqlHandlerContext> {
  /** How long a done marker is kept: the `retentionMs` option. */
  readonly retentionMs: number
  /** The pool's `connectionLimit` less one (at least 1): the receiver's default `maxConcurrentEvents`. */
  readonly maxConcurrentEvents: number
  /** True: the store keeps ordering fences in `<table>_fences`. */
  readonly ordering: boolean
  init(): Promise<void>
  claim(eventId: string, leaseMs: number, digest?: string, position?: OrderingPosition): Promise<ClaimResult>
  extend(eventId: string, token: string, leaseMs: number): Promise<boolean>
  complete(eventId: string, token: string): Promise<boolean>
  release(eventId: string, token: string): Promise<boolean>
  transaction: (
    eventId: string,
    token: string,
    work: (context: MysqlHandlerContext) => Promise<boolean>,
  ) => Promise<TransactionOutcome>
  /** The ordering keys held now by a live claim, longest held first (at most `limit`). */
  heldKeys(options: { limit: number }): Promise<HeldOrderingKey[]>
  /**
   * `mysql` (a `SELECT 1` with its latency, or why the pool cannot answer) and `mysql_migration_<nnn>` (each table
   * and its columns present). Reads the catalog only.
   */
  health(signal?: AbortSignal): Promise<HealthCheck[]>
  /** Deletes the rows past their expiry now and resolves with how many. */
  sweep(): Promise<number>
  /** Stops the background sweep. The pool is yours: the store never ends it. */
  shutdown(): void
}

/** Options of `mysqlJournal`. */
export interface MysqlJournalOptions {
  /**
   * The journal's table, optionally database-qualified.
   * @default 'payhooks_journal'
   */
  table?: string
  /**
   * How long answers are kept and returned: at least the service's 72-hour retry window.
   * @default 604_800_000 (7 days)
   */
  retentionMs?: number
  /**
   * Whether `init()` creates the table when it is missing. Set false when migrations create it.
   * @default true
   */
  createTable?: boolean
  /**
   * How often rows past retention are deleted, in batches of `sweepBatch`; 0 turns it off (call `sweep()`).
   * @default 600_000 (10 minutes)
   */
  sweepIntervalMs?: number
  /**
   * Rows deleted per statement of a sweep.
   * @default 1000
   */
  sweepBatch?: number
  /**
   * Where a failed background sweep is logged.
   * @default console
   */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/** Options of `mysqlDeadLetterStore`. */
export interface MysqlDeadLetterStoreOptions {
  /**
   * The dead letters' table, optionally database-qualified.
   * @default 'payhooks_dead_letters'
   */
  table?: string
  /**
   * Whether `init()` creates the table when it is missing. Set false when migrations create it.
   * @default true
   */
  createTable?: boolean
  /**
   * How long a replayed letter is kept before the sweep deletes it; parked letters are kept until replayed.
   * @default 604_800_000 (7 days)
   */
  replayedRetentionMs?: number
  /**
   * How often replayed letters past their retention are deleted, in batches of `sweepBatch`; 0 turns it off.
   * @default 3_600_000 (hourly)
   */
  sweepIntervalMs?: number
  /**
   * Rows deleted per statement of a sweep.
   * @default 5000
   */
  sweepBatch?: number
  /**
   * Where a failed background sweep is logged.
   * @default console
   */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/**
 * How the store reaches MySQL through a library: what `bindMysqlStore` needs, and all a binding (`drizzleStore`,
 * `kyselyStore`, ...) supplies.
 */
export interface MysqlBinding<Db> {
  /** The binding's function, for messages: `'drizzleStore'`. */
  readonly name: string
  /**
   * Statements outside any transaction (claims, renewals, sweeps, health) and upkeep on one connection (tables made
   * under a short `lock_wait_timeout`): a mysql2/promise Pool, or one shaped like it over the library's connections.
   */
  readonly pool: Pool
  /**
   * Runs `work` in a transaction of the library, giving it the library's handle of that transaction: committed when
   * `work` resolves, rolled back when it rejects (rejecting with what it rejected with).
   */
  transaction<T>(work: (db: Db) => Promise<T>): Promise<T>
  /** Runs `text` (placeholders `?`) with `values` on `db`: rows for a SELECT, mysql2's result header otherwise. */
  query(db: Db, text: string, values: unknown[]): Promise<unknown>
  /**
   * Optional, and what makes a caught SQL error fail the event: has `note` told of each statement run on `db`'s
   * connection (its text, and its error if it failed) until the function it resolves with is called. MySQL, unlike
   * PostgreSQL, goes on after a failed statement (and after a deadlock it has rolled the whole transaction back), so
   * the event's transaction is refused unless each failure was inside a savepoint rolled back to.
   */
  watch?(db: Db, note: (text: string, error?: unknown) => void): (() => void) | Promise<() => void>
  /** Optional: checks at `init()` and in `health()` that the library can serve, throwing what it got and needs. */
  check?(): void | Promise<void>
}

/** Options of the stores bound to a library (`drizzleStore`, `kyselyStore`, ...): those of `mysqlStore`, and one. */
export interface BoundMysqlStoreOptions extends MysqlStoreOptions {
  /**
   * The most events handled at once: each holds a connection of the library's pool for its transaction while it
   * runs, and claims and renewals need another. The receiver's `maxConcurrentEvents` defaults to it.
   * @default the pool's size less one when the library tells it; 9 otherwise
   */
  maxConcurrentEvents?: number
}

/** What a store bound to a library adds to the handler context: `db`, the library's handle of the transaction. */
export interface BoundMysqlHandlerContext<Db> {
  /**
   * The library's handle of this event's transaction (Drizzle's `tx`, Kysely's `Transaction`, a `Knex.Transaction`,
   * TypeORM's `EntityManager`, Sequelize's `Transaction`): write with it, and the writes commit together with the
   * event's done marker, or not at all. Opened before the handlers run and shared by the handlers of one event. Do
   * not commit or roll it back, nor use it once the handler returned. Let SQL errors propagate, or catch them inside
   * the library's savepoint (a nested transaction): MySQL goes on after a failed statement, and after a deadlock it
   * has rolled the whole transaction back.
   */
  readonly db: Db
}

/** The store a binding returns: a {@link MysqlStore} whose `context.db` is the library's transaction. */
export interface BoundMysqlStore<Db> extends WebhookStore<BoundMysqlHandlerContext<Db>> {
  readonly retentionMs: number
  readonly maxConcurrentEvents: number
  readonly ordering: boolean
  init(): Promise<void>
  claim(eventId: string, leaseMs: number, digest?: string, position?: OrderingPosition): Promise<ClaimResult>
  extend(eventId: string, token: string, leaseMs: number): Promise<boolean>
  complete(eventId: string, token: string): Promise<boolean>
  release(eventId: string, token: string): Promise<boolean>
  transaction: (
    eventId: string,
    token: string,
    work: (context: BoundMysqlHandlerContext<Db>) => Promise<boolean>,
  ) => Promise<TransactionOutcome>
  heldKeys(options: { limit: number }): Promise<HeldOrderingKey[]>
  health(signal?: AbortSignal): Promise<HealthCheck[]>
  sweep(): Promise<number>
  shutdown(): void
}

/** Options of `mysqlPauseStore`. */
export interface MysqlPauseStoreOptions {
  /**
   * The pauses' table, optionally database-qualified.
   * @default 'payhooks_pauses'
   */
  table?: string
  /**
   * Whether `init()` creates the table when missing. Set false when migrations create it (`createPauseTableSql`).
   * @default true
   */
  createTable?: boolean
  /**
   * How often each receiver reads the pauses again (one `SELECT` of the table): a pause reaches every instance
   * within about this. From 10 to 60 000.
   * @default 1000
   */
  refreshMs?: number
}
