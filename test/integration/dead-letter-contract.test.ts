// The dead-letter contract of @payhooks/testing against the dead-letter stores payhooks ships, each on its real backing.
import { type DeadLetterStore, memoryDeadLetterStore } from '@payhooks/core'
import { redisDeadLetterStore } from '@payhooks/redis'
import { deadLetterContract, deadLetterViewContract } from '@payhooks/testing/dead-letter-contract'
import { Redis } from 'ioredis'
import { afterAll } from 'vitest'
import { bullmqSubject } from '../fixtures/bullmq-dead-letters.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error(
    'REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs), which starts redis-server',
  )
}
const KEY_PREFIX = 'payhooks-dead-letter-contract:'

/** payhooks' own dead letters can be counted, so the contract's count tests run on each (not skipped). */
function counting<T extends { count?: unknown }>(letters: T): T {
  if (typeof letters.count !== 'function') throw new Error('expected the dead letters to have count()')
  return letters
}

// One process: the instances of a fleet are one instance.
const memoryFleets = new Map<string, DeadLetterStore>()
deadLetterContract('memoryDeadLetterStore', (namespace) => {
  const store = memoryFleets.get(namespace) ?? memoryDeadLetterStore()
  memoryFleets.set(namespace, store)
  return counting(store)
})

// Each instance on its own connection, as in separate processes.
const clients: Redis[] = []
deadLetterContract('redisDeadLetterStore', (namespace) => {
  const client = new Redis(REDIS_URL)
  clients.push(client)
  return counting(redisDeadLetterStore(client, { keyPrefix: `${KEY_PREFIX}{${namespace}}:` }))
})

afterAll(async () => {
  const [admin] = clients
  const keys = admin ? await admin.keys(`${KEY_PREFIX}*`) : []
  if (admin && keys.length > 0) await admin.del(...keys)
  for (const client of clients) client.disconnect()
})

// BullMQ's failed jobs, where the contract fits: through bullmqDeadLetters, the DeadLetters interface tools use.
deadLetterViewContract('bullmqDeadLetters', async (namespace) => {
  const client = new Redis(REDIS_URL, { maxRetriesPerRequest: null })
  clients.push(client)
  const subject = await bullmqSubject(client, {
    name: 'dead-letters',
    prefix: `${KEY_PREFIX}bull-${namespace}`,
    storePrefix: `${KEY_PREFIX}store-${namespace}:`,
  })
  counting(subject.deadLetters)
  return subject
})
