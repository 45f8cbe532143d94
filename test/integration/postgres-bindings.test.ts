// The transaction contract of @payhooks/testing against postgresStore and every binding of @payhooks/postgres to a
// library (Drizzle, Kysely, Knex, TypeORM, postgres.js, Prisma), on the real PostgreSQL. Each binding's store, writes,
// failing statement and savepoint are in test/fixtures/bindings/<name>.mjs, which its receiver processes import too.
// PAYHOOKS_BINDINGS=knex,typeorm runs those alone (while working on one).
import { join } from 'node:path'
import { transactionContract } from '@payhooks/testing/transaction-contract'
import pg from 'pg'
import { afterAll } from 'vitest'
import { databaseUrl } from '../fixtures/postgres.js'

const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 })
const modules = ['pg', 'drizzle', 'kysely', 'knex', 'typeorm', 'postgres-js', 'prisma']
const only = process.env.PAYHOOKS_BINDINGS?.split(',')
const bindings = await Promise.all(
  modules
    .filter((name) => !only || only.includes(name))
    .map(async (name) => {
      const file = join(import.meta.dirname, '../fixtures/bindings', `${name}.mjs`)
      return { name, file, module: await import(file) }
    }),
)
afterAll(async () => {
  for (const { module } of bindings) await module.close()
  await admin.end()
})

for (const { name, file, module } of bindings) {
  transactionContract(name, module.makeStore, {
    write: module.write,
    fail: module.fail,
    savepoint: module.savepoint,
    sql: async (text, values) => (await admin.query(text, values)).rows,
    receiver: file,
  })
}
