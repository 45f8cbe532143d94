export { createTableSql } from './sql.js'
export { postgresStore } from './store.js'
export type { PostgresHandlerContext, PostgresStore, PostgresStoreOptions } from './types.js'
