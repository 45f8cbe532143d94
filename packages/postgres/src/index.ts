export { createDeadLetterCountIndexesSql, createDeadLetterTableSql, widenDeadLetterCodeSql } from './dead-letter-sql.js'
export { postgresDeadLetterStore } from './dead-letters.js'
export { createFenceTableSql, fenceTokenColumnSql, heldKeysSql } from './fence-sql.js'
export { postgresJournal } from './journal.js'
export { createJournalTableSql } from './journal-sql.js'
export { type MigrateOptions, type MigrateResult, migrate } from './migrations.js'
export { bodyDigestColumnSql, createTableSql } from './sql.js'
export { postgresStore } from './store.js'
export type {
  PostgresDeadLetterStore,
  PostgresDeadLetterStoreOptions,
  PostgresHandlerContext,
  PostgresJournalOptions,
  PostgresStore,
  PostgresStoreOptions,
} from './types.js'
