// The transaction contract of @payhooks/testing against every binding of @payhooks/mysql to a library (Drizzle,
// Kysely, Knex, TypeORM, Sequelize, Prisma), on the real MariaDB. Each binding's store, writes, failing statement and
// savepoint are in test/fixtures/bindings/mysql-<name>.mjs, which its receiver processes import too.
// PAYHOOKS_BINDINGS=knex,typeorm runs those alone (while working on one).
import { join } from 'node:path'
import { transactionContract } from '@payhooks/testing/transaction-contract'
import mysql from 'mysql2/promise'
import { afterAll } from 'vitest'
import { mysqlUrl } from '../fixtures/mysql.js'

const admin = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 2 })
const modules = ['drizzle', 'kysely', 'knex', 'typeorm', 'sequelize', 'prisma']
const only = process.env.PAYHOOKS_BINDINGS?.split(',')
const bindings = await Promise.all(
  modules
    .filter((name) => !only || only.includes(name))
    .map(async (name) => {
      const file = join(import.meta.dirname, '../fixtures/bindings', `mysql-${name}.mjs`)
      return { name, file, module: await import(file) }
    }),
)
afterAll(async () => {
  for (const { module } of bindings) await module.close()
  await admin.end()
})

for (const { name, file, module } of bindings) {
  transactionContract(`${name} on MySQL`, module.makeStore, {
    write: module.write,
    fail: module.fail,
    savepoint: module.savepoint,
    ledgerSql: module.ledgerSql,
    sql: async (text, values) => (await admin.query(text, values))[0] as Record<string, unknown>[],
    receiver: file,
    // Fewer events than the default: the kills at each point are what the test is about, and six bindings run.
    crash: { events: 20 },
  })
}
