// The dead-letter contract of @payhooks/testing against the dead-letter stores payhooks ships, each on its real backing.
import { createHash } from 'node:crypto'
import { type DeadLetterStore, memoryDeadLetterStore } from '@payhooks/core'
import { mysqlDeadLetterStore } from '@payhooks/mysql'
import { redisDeadLetterStore } from '@payhooks/redis'
import { sampleEvent } from '@payhooks/testing'
import { type ContractEvent, deadLetterContract, deadLetterViewContract } from '@payhooks/testing/dead-letter-contract'
import { Redis } from 'ioredis'
import mysql from 'mysql2/promise'
import { afterAll, describe, expect, it } from 'vitest'
import { bullmqSubject } from '../fixtures/bullmq-dead-letters.js'
import { mysqlUrl } from '../fixtures/mysql.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

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
  return counting(redisDeadLetterStore(client, { ...UNHURRIED, keyPrefix: `${KEY_PREFIX}{${namespace}}:` }))
})

// MariaDB (MySQL's SQL): each instance on its own pool, each namespace its own table.
const mysqlPools: mysql.Pool[] = []
const mysqlTables = new Set<string>()
deadLetterContract('mysqlDeadLetterStore', (namespace) => {
  const pool = mysql.createPool({ uri: mysqlUrl(), connectionLimit: 3 })
  mysqlPools.push(pool)
  const table = `letters_${createHash('sha256').update(namespace).digest('hex').slice(0, 16)}`
  mysqlTables.add(table)
  return counting(mysqlDeadLetterStore(pool, { table }))
})

afterAll(async () => {
  const [admin] = mysqlPools
  for (const table of mysqlTables) await admin?.query(`DROP TABLE IF EXISTS \`${table}\``)
  await Promise.all(mysqlPools.map((pool) => pool.end()))
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

// Letters a release before the created_at sets parked (layout 2): init() indexes them, once, keeping each replayed
// letter's time to go.
describe('redisDeadLetterStore upgrade to the created_at sets', () => {
  it("indexes an earlier release's letters by created_at at init, and leaves replayed letters' expiry as it was", async () => {
    const client = new Redis(REDIS_URL)
    clients.push(client)
    const keyPrefix = `${KEY_PREFIX}{upgrade-${Date.now()}}:`
    const earlier = redisDeadLetterStore(client, { ...UNHURRIED, keyPrefix })
    await earlier.init?.()
    const created = (minutes: number) => new Date(Date.parse('2026-11-28T02:00:00Z') + minutes * 60_000)
    for (let i = 0; i < 6; i++) {
      await earlier.park({
        eventId: `evt_up_${i}`,
        eventType: 'transaction_settled',
        body: new TextEncoder().encode(`{"i":${i}}`),
        headers: {},
        code: 'handler_failed',
        reason: 'r',
        createdAt: i === 5 ? undefined : created(i * 10),
        parkedAt: new Date(Date.now() - 1000 + i),
      })
    }
    await earlier.markReplayed('evt_up_0', new Date())
    const expiry = await client.zscore(`${keyPrefix}expiry`, 'evt_up_0')
    // As layout 2 left them: no y: sets.
    const ySets = await client.keys(`${keyPrefix}y:*`)
    expect(ySets.length).toBeGreaterThan(0)
    await client.del(...ySets)
    await client.set(`${keyPrefix}layout`, '2')
    const window = { createdAfter: created(10), createdBefore: created(40) }
    expect(await earlier.count?.(window)).toBe(0)

    const upgraded = redisDeadLetterStore(client, { ...UNHURRIED, keyPrefix })
    await upgraded.init?.()
    expect(await client.get(`${keyPrefix}layout`)).toBe('3')
    expect(await upgraded.count?.(window)).toBe(3)
    expect((await upgraded.list({ ...window, order: 'oldest' })).map((l) => l.eventId)).toEqual([
      'evt_up_1',
      'evt_up_2',
      'evt_up_3',
    ])
    expect(await upgraded.count?.({ createdAfter: created(0), status: 'replayed' })).toBe(1)
    expect(await upgraded.count?.({ createdAfter: created(0), status: 'all' })).toBe(5)
    expect(await client.zscore(`${keyPrefix}expiry`, 'evt_up_0')).toBe(expiry)
  })
})

// Created windows larger than one read of the window (2,000 members), lying far from where a page's walk starts:
// the page then reads the window by score in chunks, whose ends must neither skip nor repeat letters sharing a score.
describe('redisDeadLetterStore: a large created window far from the walk', () => {
  it('pages and counts a window of 4,500 letters, 2,100 of them created in the same millisecond', async () => {
    const client = new Redis(REDIS_URL)
    clients.push(client)
    const store = redisDeadLetterStore(client, { ...UNHURRIED, keyPrefix: `${KEY_PREFIX}{large-${Date.now()}}:` })
    await store.init?.()
    const base = Date.parse('2026-11-28T00:00:00Z')
    const C0 = Date.parse('2026-11-25T00:00:00Z')
    // Letter i parked at base + i; created at C0 (i < 2100), in threes after it (i < 4500), then much later.
    const createdOf = (i: number) => (i < 2100 ? C0 : i < 4500 ? C0 + 1 + Math.floor((i - 2100) / 3) : C0 + 86_400_000)
    const id = (i: number) => `evt_large_${String(i).padStart(4, '0')}`
    for (let i = 0; i < 6800; i += 400) {
      await Promise.all(
        Array.from({ length: 400 }, (_, j) =>
          store.park({
            eventId: id(i + j),
            eventType: 'transaction_settled',
            body: new TextEncoder().encode(`{"i":${i + j}}`),
            headers: {},
            code: 'handler_failed',
            reason: 'r',
            createdAt: new Date(createdOf(i + j)),
            parkedAt: new Date(base + i + j),
          }),
        ),
      )
    }
    const window = { createdAfter: new Date(C0), createdBefore: new Date(C0 + 86_400_000) }
    const expected = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => id(to - 1 - k))
    // Newest first: 2,300 letters outside the window lie ahead of it, more than the walk takes.
    expect((await store.list({ ...window, limit: 50 })).map((l) => l.eventId)).toEqual(expected(4450, 4500))
    expect((await store.list({ ...window, limit: 20, offset: 30 })).map((l) => l.eventId)).toEqual(expected(4450, 4470))
    expect(await store.count?.(window)).toBe(4500)
    // A window of 1,500 (in threes) within a parked window: read by score, counted by the parked bounds.
    const threes = { createdAfter: new Date(C0 + 1), createdBefore: new Date(C0 + 501) }
    const parked = { parkedAfter: new Date(base + 1000), parkedBefore: new Date(base + 5000) }
    expect(await store.count?.({ ...threes, ...parked })).toBe(1500)
    expect(await store.count?.({ ...threes, parkedBefore: new Date(base + 2400) })).toBe(300)
  }, 120_000)
})
