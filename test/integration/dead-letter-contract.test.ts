// The dead-letter contract of @payhooks/testing against the dead-letter stores payhooks ships, each on its real backing.
import { type DeadLetterStore, memoryDeadLetterStore } from '@payhooks/core'
import { redisDeadLetterStore } from '@payhooks/redis'
import { sampleEvent } from '@payhooks/testing'
import { type ContractEvent, deadLetterContract, deadLetterViewContract } from '@payhooks/testing/dead-letter-contract'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
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

// BullMQ's replay all is core's engine: the same report, batches and cursor rules as the receiver's.
describe('bullmqDeadLetters replay all', () => {
  it('reports what it did and walks batches by cursors it refuses twice or forged', async () => {
    const client = new Redis(REDIS_URL, { maxRetriesPerRequest: null })
    clients.push(client)
    const namespace = `replay-all-${Date.now()}`
    const subject = bullmqSubject(client, {
      name: 'dead-letters',
      prefix: `${KEY_PREFIX}bull-${namespace}`,
      storePrefix: `${KEY_PREFIX}store-${namespace}:`,
    })
    try {
      for (const id of ['evt_bq_a', 'evt_bq_b', 'evt_bq_c']) {
        await subject.park(sampleEvent('transaction_settled', { eventId: id }) as ContractEvent, 'boom')
      }
      const { deadLetters } = subject
      const replayBatch = deadLetters.replayBatch
      if (!replayBatch) throw new Error('expected bullmqDeadLetters to replay in batches')
      const first = await replayBatch({ confirmCount: 3, limit: 2 })
      expect(first.outcomes.map((o) => o.status)).toEqual(['queued', 'queued'])
      expect(first.run).toMatchObject({ tried: 2, queued: 2, total: 3, remaining: 1, done: false })
      await expect(replayBatch({ cursor: `${first.cursor}x` })).rejects.toMatchObject({ reason: 'forged' })
      const last = await replayBatch({ cursor: first.cursor })
      expect(last.cursor).toBeNull()
      expect(last.run).toMatchObject({ tried: 3, queued: 3, gone: 0, remaining: 0, done: true })
      await expect(replayBatch({ cursor: first.cursor })).rejects.toMatchObject({ reason: 'stale' })
      await subject.settle?.()
      expect(['evt_bq_a', 'evt_bq_b', 'evt_bq_c'].map(subject.runs)).toEqual([1, 1, 1])
      const none = await deadLetters.replayAll()
      expect(none.report).toMatchObject({ tried: 0, total: 0, remaining: 0, done: true })
    } finally {
      await subject.close?.()
    }
  })
})
