export { createDeadLetterCountsSql } from './dead-letter-counts.js'
export {
  createDeadLetterCountIndexesSql,
  createDeadLetterCreatedIndexSql,
  createDeadLetterTableSql,
  deadLetterSweepIndexSql,
  widenDeadLetterCodeSql,
} from './dead-letter-sql.js'
export { postgresDeadLetterStore } from './dead-letters.js'
export { bindPostgresStore } from './engine.js'
export { createFenceTableSql, fenceExpiryIndexSql, fenceTokenColumnSql, heldKeysSql } from './fence-sql.js'
export { postgresJournal } from './journal.js'
export { createJournalTableSql, journalCopiesColumnSql } from './journal-sql.js'
export { type MigrateOptions, type MigrateResult, migrate } from './migrations.js'
export { createPauseTableSql } from './pause-sql.js'
export { postgresPauseStore } from './pauses.js'
export { bodyDigestColumnSql, createTableSql, expiryIndexSql } from './sql.js'
export { postgresStore } from './store.js'
export type {
  BoundHandlerContext,
  BoundPostgresStore,
  BoundPostgresStoreOptions,
  PostgresBinding,
  PostgresDeadLetterStore,
  PostgresDeadLetterStoreOptions,
  PostgresHandlerContext,
  PostgresJournalOptions,
  PostgresPauseStoreOptions,
  PostgresRows,
  PostgresStore,
  PostgresStoreOptions,
} from './types.js'
