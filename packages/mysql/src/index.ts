export { createDeadLetterTableSql } from './dead-letter-sql.js'
export { mysqlDeadLetterStore } from './dead-letters.js'
export { bindMysqlStore } from './engine.js'
export { mysqlJournal } from './journal.js'
export { createJournalTableSql } from './journal-sql.js'
export { type MigrateOptions, type MigrateResult, migrate } from './migrations.js'
export { createPauseTableSql } from './pause-sql.js'
export { mysqlPauseStore } from './pauses.js'
export { createFenceTableSql, createTableSql } from './sql.js'
export { mysqlStore } from './store.js'
export type {
  BoundMysqlHandlerContext,
  BoundMysqlStore,
  BoundMysqlStoreOptions,
  MysqlBinding,
  MysqlDeadLetterStoreOptions,
  MysqlHandlerContext,
  MysqlJournalOptions,
  MysqlPauseStoreOptions,
  MysqlStore,
  MysqlStoreOptions,
} from './types.js'
