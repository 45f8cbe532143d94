// mysqlStore on the real MariaDB (MYSQL_URL): the transaction contract of @payhooks/testing (a write through
// context.db commits with the done marker, rolls back with a failure or a lost claim, and receiver processes killed
// with SIGKILL end with exactly one row per event), and what the store refuses at creation.
import { join } from 'node:path'
import { transactionContract } from '@payhooks/testing/transaction-contract'
import mysql from 'mysql2/promise'
import { afterAll } from 'vitest'
import { mysqlUrl } from '../fixtures/mysql.js'

const admin = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 2 })
const file = join(import.meta.dirname, '../fixtures/bindings/mysql.mjs')
const binding = await import(file)
afterAll(async () => {
  await binding.close()
  await admin.end()
})

transactionContract('mysqlStore', binding.makeStore, {
  write: binding.write,
  fail: binding.fail,
  savepoint: binding.savepoint,
  ledgerSql: binding.ledgerSql,
  sql: async (text, values) => (await admin.query(text, values))[0] as Record<string, unknown>[],
  receiver: file,
})
