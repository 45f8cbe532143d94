// The store contract of @payhooks/testing against postgresStore on the test's PostgreSQL.
import { postgresStore } from '@payhooks/postgres'
import { storeContract } from '@payhooks/testing/store-contract'
import pg from 'pg'
import { afterAll } from 'vitest'
import { databaseUrl } from '../fixtures/postgres.js'

const DATABASE_URL = databaseUrl()
// The short lease of the contract's lease tests on a store behind a network round trip. The renewal test renews
// every third of it, each time after a claim by the other instance: at the default 600 ms those two round trips on a
// loaded machine had 400 ms before the lease lapsed; at 1.5 s, 1 s.
const SHORT_LEASE_MS = 1500

// Each instance on its own pool, as in separate processes; each namespace its own table.
const pools: pg.Pool[] = []
const tables = new Set<string>()
storeContract(
  'postgresStore',
  (namespace) => {
    const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 })
    pools.push(pool)
    // Room for the `_fences` suffix of its ordering fences' table.
    const table = `contract_${namespace.replace(/\W/g, '_')}`.slice(0, 56)
    tables.add(table)
    return postgresStore(pool, { table })
  },
  { heldKeys: true, shortLeaseMs: SHORT_LEASE_MS },
)

afterAll(async () => {
  const [adminPool] = pools
  for (const table of tables) await adminPool?.query(`DROP TABLE IF EXISTS "${table}", "${table}_fences"`)
  await Promise.all(pools.map((pool) => pool.end()))
})
