import type {
  ClaimResult,
  DeadLetter,
  DeadLetterCountQuery,
  DeadLetterQuery,
  DeadLetterStore,
  OrderingPosition,
  ParkedEvent,
  TransactionOutcome,
  WebhookStore,
} from '@payhooks/core'
import type { PoolClient } from 'pg'

/** Options of `postgresStore`. */
export interface PostgresStoreOptions {
  /**
   * The store's table, optionally schema-qualified (`webhooks.events`): letters, digits and `_` only. Give each
   * receiver fleet its own; the store owns every row in it.
   * @default 'payhooks_events'
   */
  table?: string
  /**
   * How long a done marker is kept. At least the service's 72-hour retry window, so every retry of a handled
   * event is recognised. The receiver's `maxEventAgeMs` follows it: keep it as long as the oldest manual resend
   * you want handled after an outage (7 days: `7 * 24 * 3_600_000`).
   * @default 262_800_000 (73 hours)
   */
  retentionMs?: number
  /**
   * Whether `init()` creates the table when it is missing (`CREATE TABLE IF NOT EXISTS`, serialised by an
   * advisory lock), and adds its `body_digest` column when a table made before it lacks one. Set false when
   * migrations create it (`sql/001_payhooks_events.sql`, then `sql/004_payhooks_events_body_digest.sql`) and the
   * receiver's role may not create tables: `init()` then only checks that the table can be read, and without the
   * column the store works as before, without reporting conflicting copies (it warns once through `logger`).
   * @default true
   */
  createTable?: boolean
  /**
   * How often the store deletes rows past their expiry (done markers older than `retentionMs`, claims whose
   * lease ran out long ago, fences past their keep), in batches of `sweepBatch` read by the expiry indexes of
   * migration 012. 0 turns it off: call `store.sweep()` from your own scheduler instead.
   * @default 3_600_000 (hourly)
   */
  sweepIntervalMs?: number
  /**
   * Rows deleted per statement of a sweep, oldest first: each batch is a short transaction of its own that skips
   * rows another statement holds (a claim being taken over), so a sweep over millions of rows never holds a lock
   * for long. The sweep goes on batch after batch until none is left.
   * @default 5000
   */
  sweepBatch?: number
  /**
   * How long a schema change made on first use (`createTable`) may wait for its table's lock (`SET LOCAL
   * lock_timeout`): an `ALTER TABLE` waiting behind a long read (a `pg_dump`, a report) queues every statement on
   * that table behind it, so it gives up instead, logs what it waited for, and is retried in the background with
   * backoff while deliveries go on as before. Indexes are built `CONCURRENTLY`. Apply migrations ahead with
   * `migrate(pool)` or `payhooks migrate --postgres URL` (docs/guide/upgrading.md).
   * @default 500
   */
  migrationLockTimeoutMs?: number
  /**
   * Where a failed background sweep or on-first-use migration is logged (one line, `warn` else `error`).
   * @default console
   */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/** What `postgresStore` adds to the handler context: the transaction the done marker commits in. */
export interface PostgresHandlerContext {
  /**
   * The `pg` client of this event's transaction: write with it, and the writes commit together with the
   * event's done marker, or not at all. The client is checked out of the pool and the transaction opened
   * (`BEGIN`) at its first query; until then only `query` and the escape helpers are there. Handlers of one
   * event share it. Do not `COMMIT`, `ROLLBACK` or `release()` it, nor use it once the handler returned. An SQL
   * error a handler catches leaves the transaction aborted (the event then fails, `transaction_aborted`): catch
   * inside a `SAVEPOINT` and `ROLLBACK TO SAVEPOINT` it.
   */
  readonly db: PoolClient
}

/** The store `postgresStore` returns: a {@link WebhookStore} whose handlers get `context.db`. */
export interface PostgresStore extends WebhookStore<PostgresHandlerContext> {
  /** How long a done marker is kept: the `retentionMs` option. */
  readonly retentionMs: number
  /**
   * The pool's `max` less one (at least 1): the receiver's default `maxConcurrentEvents`, so events being handled
   * never hold every client and the app, the claims and the renewals always find one.
   */
  readonly maxConcurrentEvents: number
  init(): Promise<void>
  claim(eventId: string, leaseMs: number, digest?: string, position?: OrderingPosition): Promise<ClaimResult>
  /**
   * True: the store keeps ordering fences in `<table>_fences` (created on first use unless `createTable` is false:
   * then apply `sql/005_payhooks_events_fences.sql`, or `createFenceTableSql(table)`). False only when that name
   * would be longer than PostgreSQL's 63 characters.
   */
  readonly ordering: boolean
  extend(eventId: string, token: string, leaseMs: number): Promise<boolean>
  complete(eventId: string, token: string): Promise<boolean>
  release(eventId: string, token: string): Promise<boolean>
  transaction: (
    eventId: string,
    token: string,
    work: (context: PostgresHandlerContext) => Promise<boolean>,
  ) => Promise<TransactionOutcome>
  /**
   * Deletes the rows past their expiry now and resolves with how many: for a scheduler of your own when
   * `sweepIntervalMs` is 0.
   */
  sweep(): Promise<number>
  /** Stops the background sweep. The pool is yours: the store never ends it. */
  shutdown(): void
}

/** What a statement answered: its rows, and how many rows it returned or changed (`null` when not told). */
export interface PostgresRows<R = Record<string, unknown>> {
  rows: R[]
  rowCount: number | null
}

/**
 * How {@link bindPostgresStore} reaches PostgreSQL through a library of the app (Drizzle, Kysely, Knex, TypeORM,
 * postgres.js, or your own): the store does everything else (claims and their leases, renewals, the done marker in
 * the handlers' transaction, a lost claim rolled back, fences, sweeps, tables made on first use). `Db` is the
 * library's handle of a transaction: handlers get it as `context.db`.
 * @example
 * // postgres.js, as `@payhooks/postgres/postgres-js` binds it
 * const binding: PostgresBinding<postgres.TransactionSql> = {
 *   name: 'postgresJsStore',
 *   transaction: (work) => sql.begin((tx) => work(tx)) as Promise<never>,
 *   query: async (tx, text, values) => rowsOf(await tx.unsafe(text, values as never[])),
 *   run: async (text, values) => rowsOf(await sql.unsafe(text, values as never[])),
 * }
 */
export interface PostgresBinding<Db> {
  /** The binding's function, for messages: `'drizzleStore'`. */
  readonly name: string
  /**
   * Runs `work` in a transaction of the library, giving it the library's handle of that transaction: committed when
   * `work` resolves, rolled back when it rejects (and rejecting with what it rejected with). Concurrent calls get
   * separate transactions, each on a connection of its own.
   */
  transaction<T>(work: (db: Db) => Promise<T>): Promise<T>
  /** Runs `text` (placeholders `$1`, `$2`...; no placeholder: may hold several statements) with `values` on `db`. */
  query(db: Db, text: string, values: unknown[]): Promise<PostgresRows>
  /** Runs `text` with `values` outside any transaction, on any connection of the library's pool. */
  run(text: string, values: unknown[]): Promise<PostgresRows>
  /**
   * Optional: runs `work` with statements on one connection of the pool, outside any transaction, then gives the
   * connection back. Only upkeep needs it (indexes built `CONCURRENTLY` under a session lock, on a table made by an
   * earlier release); without it they are not built and each try is logged: apply them with `payhooks migrate`.
   */
  session?<T>(work: (run: (text: string, values: unknown[]) => Promise<PostgresRows>) => Promise<T>): Promise<T>
  /** Optional: the connections of the library's pool, when it tells: `maxConcurrentEvents` is one less. */
  readonly poolSize?: number
  /**
   * Optional: checks at `init()` that the library can serve (a pool not ended, a data source initialized), throwing
   * an error that says what it got and what it needs.
   */
  check?(): void | Promise<void>
  /** Optional: the SQL error a handler caught on `db`, for the message of a `TransactionAbortedError`. */
  lastError?(db: Db): Error | undefined
}

/** Options of the stores bound to a library (`drizzleStore`, `kyselyStore`, ...): those of `postgresStore`, and one. */
export interface BoundPostgresStoreOptions extends PostgresStoreOptions {
  /**
   * The most events handled at once: each holds a connection of the library's pool for its transaction while it
   * runs, and claims and renewals need another. The receiver's `maxConcurrentEvents` defaults to it.
   * @default the pool's size less one when the library tells it; 9 otherwise (pg's default pool of 10, less one)
   */
  maxConcurrentEvents?: number
}

/** What a store bound to a library adds to the handler context: `db`, the library's handle of the transaction. */
export interface BoundHandlerContext<Db> {
  /**
   * The library's handle of this event's transaction (Drizzle's `tx`, Kysely's `Transaction`, a `Knex.Transaction`,
   * TypeORM's `EntityManager`, postgres.js's `TransactionSql`): write with it, and the writes commit together with
   * the event's done marker, or not at all. Opened before the handlers run and shared by the handlers of one event.
   * Do not commit or roll it back, nor use it once the handler returned. An SQL error a handler catches leaves the
   * transaction aborted (the event then fails, `transaction_aborted`): catch inside the library's savepoint.
   */
  readonly db: Db
}

/** The store {@link bindPostgresStore} returns: a {@link WebhookStore} whose handlers get the library's `db`. */
export interface BoundPostgresStore<Db> extends WebhookStore<BoundHandlerContext<Db>> {
  /** How long a done marker is kept: the `retentionMs` option. */
  readonly retentionMs: number
  /** The receiver's default `maxConcurrentEvents` (see {@link BoundPostgresStoreOptions.maxConcurrentEvents}). */
  readonly maxConcurrentEvents: number
  /** Checks the library's object ({@link PostgresBinding.check}), then makes or checks the tables. */
  init(): Promise<void>
  claim(eventId: string, leaseMs: number, digest?: string, position?: OrderingPosition): Promise<ClaimResult>
  /** As {@link PostgresStore.ordering}. */
  readonly ordering: boolean
  extend(eventId: string, token: string, leaseMs: number): Promise<boolean>
  complete(eventId: string, token: string): Promise<boolean>
  release(eventId: string, token: string): Promise<boolean>
  transaction: (
    eventId: string,
    token: string,
    work: (context: BoundHandlerContext<Db>) => Promise<boolean>,
  ) => Promise<TransactionOutcome>
  /** Deletes the rows past their expiry now and resolves with how many. */
  sweep(): Promise<number>
  /** Stops the background sweep. The library's pool is yours: the store never ends it. */
  shutdown(): void
}

/** Options of `postgresDeadLetterStore`. */
export interface PostgresDeadLetterStoreOptions {
  /**
   * The dead-letter table, optionally schema-qualified (`webhooks.dead_letters`): letters, digits and `_` only.
   * The store owns every row in it; receivers sharing one see the same letters.
   * @default 'payhooks_dead_letters'
   */
  table?: string
  /**
   * Whether `init()` creates the table and its list index when missing (`IF NOT EXISTS`, serialised by an
   * advisory lock). Set false when migrations create them (`sql/002_payhooks_dead_letters.sql`) and the
   * receiver's role may not: `init()` then only checks that the table's columns can be read.
   * @default true
   */
  createTable?: boolean
  /**
   * How long a replayed letter is kept after its `replayedAt` (for `list({ status: 'replayed' })`, and so a second
   * replay reads as a duplicate), before the sweep deletes it. Parked letters are never deleted.
   * @default 604_800_000 (7 days)
   */
  replayedRetentionMs?: number
  /**
   * How often the store deletes replayed letters past `replayedRetentionMs`, in batches of `sweepBatch` (read by the
   * index on `replayed_at` of migration 010). 0 turns it off: call `deadLetters.sweep()` from your own scheduler
   * instead.
   * @default 3_600_000 (hourly)
   */
  sweepIntervalMs?: number
  /**
   * Letters deleted per statement of a sweep, oldest first: each batch is a short transaction of its own that skips
   * letters another statement holds, so a sweep over millions of rows never holds a lock for long. The sweep goes on
   * batch after batch until none is left.
   * @default 5000
   */
  sweepBatch?: number
  /**
   * How long a schema change made on first use (`createTable`) may wait for its table's lock (`SET LOCAL
   * lock_timeout`): an `ALTER TABLE` waiting behind a long read (a `pg_dump`, a report) queues every statement on
   * that table behind it, so it gives up instead, logs what it waited for, and is retried in the background with
   * backoff while deliveries go on as before. Indexes are built `CONCURRENTLY`. Apply migrations ahead with
   * `migrate(pool)` or `payhooks migrate --postgres URL` (docs/guide/upgrading.md).
   * @default 500
   */
  migrationLockTimeoutMs?: number
  /**
   * Where a failed background sweep or on-first-use migration is logged (one line, `warn` else `error`).
   * @default console
   */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/** The store `postgresDeadLetterStore` returns: a durable {@link DeadLetterStore} with a retention sweep. */
export interface PostgresDeadLetterStore extends DeadLetterStore {
  readonly durable: true
  /** Creates the table and index if missing (or checks them, with `createTable: false`), starts the sweep. */
  init(): Promise<void>
  park(event: ParkedEvent): Promise<DeadLetter>
  get(eventId: string): Promise<DeadLetter | undefined>
  list(query?: DeadLetterQuery): Promise<DeadLetter[]>
  markReplayed(eventId: string, at: Date): Promise<boolean>
  delete(eventId: string): Promise<boolean>
  /**
   * How many letters match: the sum of the counts kept by migration 010's triggers (a few rows, however many letters),
   * or, with `parkedAfter`/`parkedBefore` or before the counts of an earlier release's table are filled, an index
   * scan of the matching letters.
   */
  count(query?: DeadLetterCountQuery): Promise<number>
  /**
   * Deletes the replayed letters past `replayedRetentionMs` now and resolves with how many: for a scheduler of
   * your own when `sweepIntervalMs` is 0.
   */
  sweep(): Promise<number>
  /** Stops the background sweep. The pool is yours: the store never ends it. */
  shutdown(): void
}

/** Options of `postgresJournal`. */
export interface PostgresJournalOptions {
  /**
   * The journal's table, optionally schema-qualified.
   * @default 'payhooks_journal'
   */
  table?: string
  /**
   * Whether `init()` creates the table and its indexes when missing. Set false when migrations create them
   * (`sql/009_payhooks_journal.sql`); `init()` then only checks the table is there.
   * @default true
   */
  createTable?: boolean
  /**
   * How long an answer is kept. At least the service's 72 hours.
   * @default 604_800_000 (7 days)
   */
  retentionMs?: number
  /**
   * How often each instance deletes the rows past retention; 0 never (sweep from a job of yours with `sweep()`).
   * @default 600_000 (10 minutes)
   */
  sweepIntervalMs?: number
  /**
   * Rows deleted per statement of a sweep: each batch is a short transaction of its own.
   * @default 1000
   */
  sweepBatch?: number
  /** Where a failed sweep is told, one line. @default console */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/** Options of `postgresPauseStore`. */
export interface PostgresPauseStoreOptions {
  /**
   * The pauses' table, optionally schema-qualified.
   * @default 'payhooks_pauses'
   */
  table?: string
  /**
   * Whether `init()` creates the table when missing. Set false when migrations create it
   * (`sql/016_payhooks_pauses.sql`).
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

/** Options of `migrate`. */
export interface MigrateOptions {
  /**
   * The store's table, as given to `postgresStore` (`table`); its fences are `<table>_fences`.
   * @default 'payhooks_events'
   */
  table?: string
  /**
   * The dead-letter table, as given to `postgresDeadLetterStore`; `false` leaves dead letters alone.
   * @default 'payhooks_dead_letters'
   */
  deadLetterTable?: string | false
  /**
   * The journal's table, as given to `postgresJournal` (`table`): made (migration 009) ahead of a release that turns
   * the journal on, or its indexes completed and its `copies` column added (013); `false` leaves it alone.
   * @default 'payhooks_journal'
   */
  journalTable?: string | false
  /**
   * The pauses' table, as given to `postgresPauseStore` (`table`), to make it (migration 016) ahead of a release
   * that turns pauses on with `createTable: false`. Left alone unless named: `postgresPauseStore` makes it on first
   * use otherwise.
   * @default false
   */
  pauseTable?: string | false
  /**
   * How long each `ALTER TABLE` may wait for its lock (`SET LOCAL lock_timeout`) before it gives up, lets the
   * statements queued behind it through, and is tried again: a long read (a `pg_dump`, a report) never stalls
   * deliveries for longer than this.
   * @default 2000
   */
  lockTimeoutMs?: number
  /**
   * How many times a schema change that did not get its lock is tried (waiting 1 s, doubled up to 15 s, between
   * tries) before `migrate` rejects, naming the migration, the table and the sessions holding it.
   * @default 10
   */
  attempts?: number
  /** Where each wait for a lock is logged (one line, `warn` else `error`). @default console */
  logger?: { warn?(message: string): void; error(message: string): void }
}

/** What `migrate` did: each migration it applied, by number (`'007'`); none when all were there. */
export interface MigrateResult {
  applied: string[]
}
