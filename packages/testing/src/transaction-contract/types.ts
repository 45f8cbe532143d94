import type { WebhookStore } from '@payhooks/core'

/** A store whose handlers get `context.db`, the handle of the transaction its done marker commits in. */
export type TransactionStore<Db> = WebhookStore<{ readonly db: Db }>

/**
 * Makes a store on the table `table` (created by its `init`, which the contract calls): one per call, so two calls
 * make two instances of one fleet, as in two processes.
 */
export type TransactionStoreFactory<Db> = (table: string) => TransactionStore<Db> | Promise<TransactionStore<Db>>

/** What {@link transactionContract} needs besides the store: how to write, fail and nest through `db`, and SQL. */
export interface TransactionContractOptions<Db> {
  /**
   * Writes one row through `db` into `ledger`, a table of the contract's (`id bigserial, event_id text, pid int`):
   * `INSERT INTO <ledger> (event_id, pid) VALUES (<eventId>, <process.pid>)`.
   */
  write(db: Db, ledger: string, eventId: string): Promise<unknown>
  /**
   * The statement making the ledger table `ledger`, for a database other than PostgreSQL: an auto-incremented `id`,
   * `event_id` text and `pid` int.
   * @default `CREATE TABLE <ledger> (id bigserial PRIMARY KEY, event_id text NOT NULL, pid int NOT NULL)`
   * @example
   * ledgerSql: (ledger) => `CREATE TABLE ${ledger} (id BIGINT AUTO_INCREMENT PRIMARY KEY, event_id VARCHAR(255) NOT NULL, pid INT NOT NULL)`
   */
  ledgerSql?(ledger: string): string
  /** Sends a statement through `db` that the database refuses (PostgreSQL: `SELECT no_such_column FROM pg_class`) (`SELECT no_such_column FROM pg_class`), rejecting. */
  fail(db: Db): Promise<unknown>
  /** Runs `work` inside a savepoint of `db` (the library's nested transaction), rejecting as `work` does. */
  savepoint(db: Db, work: (db: Db) => Promise<unknown>): Promise<unknown>
  /** Runs SQL on the same database outside any store (the contract makes, reads and drops its tables with it). */
  sql(text: string, values?: unknown[]): Promise<Record<string, unknown>[]>
  /**
   * The ES module (absolute path or file URL) the crash test's receiver processes import: it exports
   * `makeStore(table)` and `write(db, ledger, eventId)` as above, and may export `createWebhooks` (else that of the
   * `@payhooks/core` the working directory resolves).
   */
  receiver: string | URL
  /** The crash test's size: events delivered twice each, and planned kills at each of the three points. */
  crash?: { events?: number; killsPerPoint?: number }
}
