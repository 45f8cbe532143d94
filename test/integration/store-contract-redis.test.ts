// The store contract of @payhooks/testing against redisStore on the test's redis-server.
import { redisStore } from '@payhooks/redis'
import { storeContract } from '@payhooks/testing/store-contract'
import { Redis } from 'ioredis'
import { afterAll } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error(
    'REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs), which starts redis-server',
  )
}
const KEY_PREFIX = 'payhooks-contract:'
// The short lease of the contract's lease tests on a store behind a network round trip. The renewal test renews
// every third of it, each time after a claim by the other instance: at the default 600 ms those two round trips on a
// loaded machine had 400 ms before the lease lapsed; at 1.5 s, 1 s.
const SHORT_LEASE_MS = 1500

// Each instance on its own connection, as in separate processes.
const clients: Redis[] = []
storeContract(
  'redisStore',
  (namespace) => {
    const client = new Redis(REDIS_URL)
    clients.push(client)
    return redisStore(client, { keyPrefix: `${KEY_PREFIX}${namespace}:`, ...UNHURRIED })
  },
  { heldKeys: true, shortLeaseMs: SHORT_LEASE_MS },
)

afterAll(async () => {
  const [admin] = clients
  const keys = admin ? await admin.keys(`${KEY_PREFIX}*`) : []
  if (admin && keys.length > 0) await admin.del(...keys)
  for (const client of clients) client.disconnect()
})
