// Dead letters at volume: count, first page, a page 90,000 deep (by offset and by keyset cursor), counts and pages
// within windows of the events' created_at (1% of the letters, the oldest; half of them) on
// redisDeadLetterStore and postgresDeadLetterStore holding LETTERS letters (default 100,000), and how long a replay
// of all of them takes with HANDLER_MS handlers (REPLAY=1). Medians of ROUNDS calls.
// Uses REDIS_URL / DATABASE_URL, or starts its own; STORES=redis or postgres for one. Run: pnpm bench dead-letters-volume
import { createWebhooks, deadLetterCursor, memoryStore } from '@payhooks/core'
import { postgresDeadLetterStore } from '@payhooks/postgres'
import { redisDeadLetterStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { createdAtOf, median, SECRET, seedPostgres, seedRedis, TYPES } from './dead-letters-seed.mjs'
import { startRedis } from './redis-server.mjs'

const LETTERS = Number(process.env.LETTERS ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 21)
const HANDLER_MS = Number(process.env.HANDLER_MS ?? 2)
/** Which stores to measure: `redis`, `postgres`, or both (`redis,postgres`, the default). */
const STORES = (process.env.STORES ?? 'redis,postgres').split(',')
async function time(what, call) {
  const samples = []
  for (let i = 0; i < ROUNDS; i++) {
    const started = process.hrtime.bigint()
    await call()
    samples.push(Number(process.hrtime.bigint() - started) / 1e6)
  }
  console.log(`  ${what.padEnd(44)} median ${median(samples).toFixed(2)} ms (min ${Math.min(...samples).toFixed(2)})`)
}

async function measure(name, store) {
  console.log(`${name}, ${LETTERS} letters`)
  await time('count() parked', () => store.count())
  await time("count({ code: 'handler_failed' })", () => store.count({ code: 'handler_failed' }))
  await time('count({ code, eventType })', () => store.count({ code: 'handler_failed', eventType: TYPES[0] }))
  await time('list() first page of 50', () => store.list({ limit: 50 }))
  await time('list() offset 90,000, 50', () => store.list({ limit: 50, offset: Math.min(90_000, LETTERS - 50) }))
  const deep = (await store.list({ limit: 1, offset: Math.min(90_000, LETTERS - 50) }))[0]
  const after = deadLetterCursor(deep)
  await time('list() keyset 90,000 deep, 50', () => store.list({ limit: 50, after }))
  await time('list({ code }) keyset deep, 50', () => store.list({ limit: 50, after, code: 'handler_failed' }))
  // Created windows: the oldest 1% (a newest-first page finds them last), and half of the letters.
  const at = (i) => new Date(createdAtOf(i, start))
  const small = { createdAfter: at(0), createdBefore: at(Math.floor(LETTERS / 100)) }
  const half = { createdAfter: at(Math.floor(LETTERS / 4)), createdBefore: at(Math.floor((3 * LETTERS) / 4)) }
  const run = { parkedBefore: new Date(Date.now() + 1) }
  await time('count(created 1%)', () => store.count(small))
  await time('count(created 50%)', () => store.count(half))
  await time('count(created 50%, code)', () => store.count({ ...half, code: 'handler_failed' }))
  await time("count(created 50%, parkedBefore: now): a run's", () => store.count({ ...half, ...run }))
  const parked = { parkedAfter: new Date(start + LETTERS / 2), parkedBefore: new Date(start + LETTERS / 2 + 5000) }
  await time('count(created 50%, parked 5%)', () => store.count({ ...half, ...parked }))
  await time('list(created 1%) first page of 50, newest', () => store.list({ ...small, limit: 50 }))
  await time('list(created 50%) first page of 50', () => store.list({ ...half, limit: 50 }))
  const mid = (await store.list({ ...half, limit: 1, offset: Math.floor(LETTERS / 4) }))[0]
  const inside = deadLetterCursor(mid)
  await time('list(created 50%) keyset 25,000 deep, 50', () => store.list({ ...half, limit: 50, after: inside }))
  await time("list(created 50%) oldest first, 500: a run's batch", () =>
    store.list({ ...half, ...run, limit: 500, order: 'oldest' }),
  )
}

async function replayAll(name, store) {
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), deadLetters: store, logger: { error() {} } })
  webhooks.onAny(() => new Promise((resolve) => setTimeout(resolve, HANDLER_MS)))
  const started = Date.now()
  const outcomes = await webhooks.deadLetters.replayAll({})
  const seconds = (Date.now() - started) / 1000
  console.log(
    `  ${name}: replayAll, ${HANDLER_MS} ms handlers, default concurrency: ${outcomes.length} letters in ${seconds.toFixed(1)} s (${Math.round(outcomes.length / seconds)}/s); report ${JSON.stringify(outcomes.report)}`,
  )
  await webhooks.close()
}

const start = Date.now() - LETTERS - 60_000
let seeded = Date.now()

// Redis: parks through the store's own script, many in flight on one connection (ioredis pipelines them).
if (STORES.includes('redis')) {
  const redisServer = process.env.REDIS_URL ? undefined : await startRedis()
  const redis = new Redis(process.env.REDIS_URL ?? redisServer.url)
  const prefix = `{bench-volume-${Date.now()}}:`
  const redisStore = redisDeadLetterStore(redis, { keyPrefix: prefix, commandTimeoutMs: 60_000 })
  await redisStore.init()
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1])
  const memoryBefore = await usedMemory()
  await seedRedis(redisStore, LETTERS, start)
  const perLetter = Math.round(((await usedMemory()) - memoryBefore) / LETTERS)
  console.log(`(seeded Redis in ${((Date.now() - seeded) / 1000).toFixed(1)} s, ${perLetter} bytes a letter)`)
  // What each family of sorted sets costs a letter: x: (list order), y: (by created_at).
  for (const family of ['x', 'y']) {
    let bytes = 0
    for (const key of await redis.keys(`${prefix}${family}:*`)) bytes += Number(await redis.memory('USAGE', key))
    console.log(`  ${family}: sets, ${Math.round(bytes / LETTERS)} bytes a letter`)
  }
  await measure('redisDeadLetterStore', redisStore)
  if (process.env.REPLAY === '1') await replayAll('redisDeadLetterStore', redisStore)
  const keys = await redis.keys(`${prefix}*`)
  for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000))
  redis.disconnect()
  await redisServer?.stop()
}

// PostgreSQL: INSERT ... SELECT FROM unnest(...) 10,000 rows a statement, then VACUUM ANALYZE (index-only scans).
if (STORES.includes('postgres')) {
  const pgServer = process.env.DATABASE_URL ? undefined : await startPostgres()
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? pgServer.url, max: 8 })
  const table = `bench_dead_letters_${Date.now()}`
  const pgStore = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
  await pgStore.init()
  seeded = Date.now()
  await seedPostgres(pool, table, LETTERS, start)
  console.log(`(seeded PostgreSQL in ${((Date.now() - seeded) / 1000).toFixed(1)} s)`)
  await measure('postgresDeadLetterStore', pgStore)
  if (process.env.REPLAY === '1') await replayAll('postgresDeadLetterStore', pgStore)

  await pool.query(`DROP TABLE ${table}`)
  await pool.end()
  await pgServer?.stop()
}
