// The store contract of @payhooks/testing against every store payhooks ships, each on its real backing.
import { type MemoryStore, memoryStore, type WebhookStore } from '@payhooks/core'
import { mysqlStore } from '@payhooks/mysql'
import { postgresStore } from '@payhooks/postgres'
import { redisStore } from '@payhooks/redis'
import { storeContract } from '@payhooks/testing/store-contract'
import { Redis } from 'ioredis'
import mysql from 'mysql2/promise'
import pg from 'pg'
import { afterAll } from 'vitest'
import { mysqlUrl } from '../fixtures/mysql.js'
import { databaseUrl } from '../fixtures/postgres.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error(
    'REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs), which starts redis-server',
  )
}
const DATABASE_URL = databaseUrl()
const KEY_PREFIX = 'payhooks-contract:'
// The short lease of the contract's lease tests on a store behind a network round trip. The renewal test renews
// every third of it, each time after a claim by the other instance: at the default 600 ms those two round trips on a
// loaded machine had 400 ms before the lease lapsed; at 1.5 s, 1 s.
const SHORT_LEASE_MS = 1500

// One process: the instances of a fleet are one instance.
const memoryFleets = new Map<string, WebhookStore>()
storeContract(
  'memoryStore',
  (namespace) => {
    const store = memoryFleets.get(namespace) ?? memoryStore()
    memoryFleets.set(namespace, store)
    return store
  },
  { heldKeys: true },
)

// A store written before body digests: it drops claim's third argument and answers none, and still meets the
// contract, the receiver answering copies with other bytes as plain duplicates.
const legacyFleets = new Map<string, MemoryStore>()
storeContract(
  'a store without digests',
  (namespace) => {
    const inner = legacyFleets.get(namespace) ?? memoryStore()
    legacyFleets.set(namespace, inner)
    return {
      retentionMs: inner.retentionMs,
      claim: (eventId, leaseMs) => inner.claim(eventId, leaseMs),
      extend: (eventId, token, leaseMs) => inner.extend(eventId, token, leaseMs),
      complete: (eventId, token) => inner.complete(eventId, token),
      release: (eventId, token) => inner.release(eventId, token),
    }
  },
  { digests: false, ordering: false },
)

// Each instance on its own connection, as in separate processes.
const clients: Redis[] = []
storeContract(
  'redisStore',
  (namespace) => {
    const client = new Redis(REDIS_URL)
    clients.push(client)
    return redisStore(client, { keyPrefix: `${KEY_PREFIX}${namespace}:` })
  },
  { heldKeys: true, shortLeaseMs: SHORT_LEASE_MS },
)

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

// MariaDB (MySQL's SQL): each instance on its own pool, each namespace its own table.
const mysqlPools: mysql.Pool[] = []
const mysqlTables = new Set<string>()
storeContract(
  'mysqlStore',
  (namespace) => {
    const pool = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 4 })
    mysqlPools.push(pool)
    const table = `contract_${namespace.replace(/\W/g, '_')}`.slice(0, 56)
    mysqlTables.add(table)
    return mysqlStore(pool, { table })
  },
  { heldKeys: true, shortLeaseMs: SHORT_LEASE_MS },
)

afterAll(async () => {
  const [admin] = mysqlPools
  for (const table of mysqlTables) await admin?.query(`DROP TABLE IF EXISTS \`${table}\`, \`${table}_fences\``)
  await Promise.all(mysqlPools.map((pool) => pool.end()))
})

afterAll(async () => {
  const [adminPool] = pools
  for (const table of tables) await adminPool?.query(`DROP TABLE IF EXISTS "${table}", "${table}_fences"`)
  await Promise.all(pools.map((pool) => pool.end()))
})

afterAll(async () => {
  const [admin] = clients
  const keys = admin ? await admin.keys(`${KEY_PREFIX}*`) : []
  if (admin && keys.length > 0) await admin.del(...keys)
  for (const client of clients) client.disconnect()
})
