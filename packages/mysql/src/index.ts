export { type MigrateOptions, type MigrateResult, migrate } from './migrations.js'
export { createFenceTableSql, createTableSql } from './sql.js'
export { mysqlStore } from './store.js'
export type { MysqlHandlerContext, MysqlStore, MysqlStoreOptions } from './types.js'
