// Dead letters at volume: count, first page, a page 90,000 deep (by offset and by keyset cursor) on
// redisDeadLetterStore and postgresDeadLetterStore holding LETTERS letters (default 100,000), and how long a replay
// of all of them takes with HANDLER_MS handlers (REPLAY=1). Medians of ROUNDS calls.
// Uses REDIS_URL / DATABASE_URL, or starts its own. Run: pnpm bench dead-letters-volume
import { createWebhooks, deadLetterCursor, memoryStore } from '@payhooks/core'
import { postgresDeadLetterStore } from '@payhooks/postgres'
import { redisDeadLetterStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { median, SECRET, seedPostgres, seedRedis, TYPES } from './dead-letters-seed.mjs'
import { startRedis } from './redis-server.mjs'

const LETTERS = Number(process.env.LETTERS ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 21)
const HANDLER_MS = Number(process.env.HANDLER_MS ?? 2)
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

// Redis: parks through the store's own script, many in flight on one connection (ioredis pipelines them).
const redisServer = process.env.REDIS_URL ? undefined : await startRedis()
const redis = new Redis(process.env.REDIS_URL ?? redisServer.url)
const prefix = `{bench-volume-${Date.now()}}:`
const redisStore = redisDeadLetterStore(redis, { keyPrefix: prefix, commandTimeoutMs: 60_000 })
await redisStore.init()
const start = Date.now() - LETTERS - 60_000
let seeded = Date.now()
await seedRedis(redisStore, LETTERS, start)
console.log(`(seeded Redis in ${((Date.now() - seeded) / 1000).toFixed(1)} s)`)
await measure('redisDeadLetterStore', redisStore)
if (process.env.REPLAY === '1') await replayAll('redisDeadLetterStore', redisStore)

// PostgreSQL: INSERT ... SELECT FROM unnest(...) 10,000 rows a statement, then VACUUM ANALYZE (index-only scans).
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
const keys = await redis.keys(`${prefix}*`)
for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000))
redis.disconnect()
await redisServer?.stop()
