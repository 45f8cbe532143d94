// The store contract of @payhooks/testing against mysqlStore on the test's MariaDB (MySQL's SQL).
import { mysqlStore } from '@payhooks/mysql'
import { storeContract } from '@payhooks/testing/store-contract'
import mysql from 'mysql2/promise'
import { afterAll } from 'vitest'
import { mysqlUrl } from '../fixtures/mysql.js'

// The short lease of the contract's lease tests on a store behind a network round trip (see store-contract-redis).
const SHORT_LEASE_MS = 1500

// Each instance on its own pool, as in separate processes; each namespace its own table.
const pools: mysql.Pool[] = []
const tables = new Set<string>()
storeContract(
  'mysqlStore',
  (namespace) => {
    const pool = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 4 })
    pools.push(pool)
    const table = `contract_${namespace.replace(/\W/g, '_')}`.slice(0, 56)
    tables.add(table)
    return mysqlStore(pool, { table })
  },
  { heldKeys: true, shortLeaseMs: SHORT_LEASE_MS },
)

afterAll(async () => {
  const [admin] = pools
  for (const table of tables) await admin?.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_fences\``)
  await Promise.all(pools.map((pool) => pool.end()))
})
