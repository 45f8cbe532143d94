// What the event journal (issue 41) costs a handled delivery: webhooks.receive() of a signed transaction_settled,
// handled once, 32 in flight, with redisStore (and separately postgresStore), with the store's journal
// (redisJournal / postgresJournal, its batches flushed inside the measured span) against the same receiver without
// one. CPU per delivery of this process (process.cpuUsage: the work the journal adds here, its batching and
// encoding included), wall time for scale; rounds in rotating order, medians of per-round ratios. Then the memory
// per journaled answer: Redis used_memory before and after 20 000 answers, PostgreSQL pg_total_relation_size of the
// table over its rows. Uses REDIS_URL / DATABASE_URL, or starts its own servers.
// Run: pnpm bench journal (or ONLY=redis ROUNDS=9 DELIVERIES=5000 node --expose-gc bench/journal.bench.mjs)
import { createWebhooks } from '@payhooks/core'
import { postgresJournal, postgresStore } from '@payhooks/postgres'
import { redisJournal, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { startRedis } from './redis-server.mjs'

const ROUNDS = Number(process.env.ROUNDS ?? 7)
const DELIVERIES = Number(process.env.DELIVERIES ?? 2_000)
const CONCURRENCY = 32
const MEMORY_ANSWERS = 20_000
const SECRET = 'whsec_bench_journal'
/** `redis`, `postgres` or `memory` runs that part alone (the memory figures come after either part, or alone). */
const ONLY = process.env.ONLY

const redisServer = process.env.REDIS_URL ? undefined : await startRedis()
const pgServer = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => {
  redisServer?.stop()
  pgServer?.stop()
})
const redis = new Redis(process.env.REDIS_URL ?? redisServer.url)
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL ?? pgServer.url, max: CONCURRENCY + 4 })
const runId = Date.now().toString(36)
const tables = []

/** Signed deliveries made ahead, so signing is not measured. */
async function deliveries(label, count) {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const { body, headers } = await signedDelivery(
        sampleEvent('transaction_settled', { eventId: `evt_${label}_${i}` }),
        SECRET,
      )
      return { method: 'POST', body, getHeader: (name) => headers[name] }
    }),
  )
}

async function run(webhooks, batch) {
  // With --expose-gc each round starts from a collected heap, so a collection left over from the round before is not
  // charged to this one (the rounds are short: one major collection moves a round's ratio by 0.3x).
  globalThis.gc?.()
  let next = 0
  const wall = performance.now()
  const cpu = process.cpuUsage()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < batch.length) {
        const answer = await webhooks.receive(batch[next++])
        if (answer.status !== 200) throw new Error(`answered ${answer.status}`)
      }
    }),
  )
  await webhooks.events.flush().catch(() => {})
  const used = process.cpuUsage(cpu)
  return { cpu: (used.user + used.system) / batch.length, wall: ((performance.now() - wall) * 1000) / batch.length }
}

function receiver(store, journal) {
  const webhooks = createWebhooks({ secret: SECRET, store, journal, instance: 'bench', checkAtStart: false })
  webhooks.on('transaction_settled', () => {})
  return webhooks
}

async function compare(backend, make) {
  const variants = { without: make(false), with: make(true) }
  for (const webhooks of Object.values(variants)) await run(webhooks, await deliveries(`warm${Math.random()}`, 500))
  const names = Object.keys(variants)
  const results = { without: [], with: [] }
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + round) % names.length]
      results[name].push(await run(variants[name], await deliveries(`${backend}${name}${round}`, DELIVERIES)))
    }
  }
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
  const ratios = (field) => results.with.map((r, i) => r[field] / results.without[i][field])
  const ratio = (field) => median(ratios(field))
  console.log(
    `${backend}: a handled delivery, ${CONCURRENCY} in flight, ${DELIVERIES} per round (${ROUNDS} rounds, medians)`,
  )
  for (const name of names) {
    const cpu = median(results[name].map((r) => r.cpu))
    const wall = median(results[name].map((r) => r.wall))
    console.log(
      `  ${`${name} journal`.padEnd(16)} CPU ${cpu.toFixed(1)} µs/delivery, wall ${wall.toFixed(1)} µs/delivery`,
    )
  }
  console.log(
    `  with / without   CPU ${ratio('cpu').toFixed(3)}x, wall ${ratio('wall').toFixed(3)}x (median of per-round ratios)`,
  )
  const range = (field) => `${Math.min(...ratios(field)).toFixed(3)}–${Math.max(...ratios(field)).toFixed(3)}x`
  console.log(`  per-round range  CPU ${range('cpu')}, wall ${range('wall')}`)
  console.log(
    `  CPU ratios       ${ratios('cpu')
      .map((r) => r.toFixed(3))
      .join(' ')}`,
  )
  for (const webhooks of Object.values(variants)) await webhooks.close()
}

if (ONLY !== 'postgres' && ONLY !== 'memory')
  await compare('Redis', (journaled) =>
    receiver(
      redisStore(redis, { keyPrefix: `bench-journal:${runId}:store:` }),
      journaled ? redisJournal(redis, { keyPrefix: `bench-journal:${runId}:journal:` }) : undefined,
    ),
  )

if (ONLY !== 'redis' && ONLY !== 'memory')
  await compare('PostgreSQL', (journaled) => {
    const table = `bench_journal_${runId}_${tables.length}`
    tables.push(table, `${table}_events`)
    return receiver(
      postgresStore(pool, { table: `${table}_events` }),
      journaled ? postgresJournal(pool, { table, sweepIntervalMs: 0 }) : undefined,
    )
  })

// Memory per answer: one answer per event (the common case: handled on the first delivery), 32-byte ids.
const records = (prefix) =>
  Array.from({ length: MEMORY_ANSWERS }, (_, i) => ({
    id: `${prefix}${i.toString(36).padStart(8, '0')}`,
    at: Date.now() - (i % 3_600) * 1000,
    eventId: `evt_${runId}_${i.toString().padStart(20, '0')}`,
    eventType: 'transaction_settled',
    createdAt: new Date().toISOString(),
    status: 200,
    outcome: i % 50 === 0 ? 'handler_failed' : 'processed',
    instance: 'web-7f9c4d8b-x2k:4121',
    durationMs: 12,
    secretIndex: 0,
  }))
const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1])
const journal = redisJournal(redis, { keyPrefix: `bench-journal:${runId}:memory:` })
const before = await usedMemory()
const answers = records('a1b2c3d4e5f6')
for (let i = 0; i < answers.length; i += 256) await journal.write(answers.slice(i, i + 256))
const redisBytes = ((await usedMemory()) - before) / MEMORY_ANSWERS
const table = `bench_journal_${runId}_memory`
tables.push(table)
const pgJournal = postgresJournal(pool, { table, sweepIntervalMs: 0 })
await pgJournal.init()
for (let i = 0; i < answers.length; i += 256) await pgJournal.write(answers.slice(i, i + 256))
await pool.query(`VACUUM ANALYZE ${table}`)
const { rows } = await pool.query(`SELECT pg_total_relation_size($1) AS bytes, (SELECT count(*) FROM ${table}) AS n`, [
  table,
])
console.log(`memory per journaled answer (${MEMORY_ANSWERS} answers, one per event, 2% failures)`)
console.log(`  Redis       ${redisBytes.toFixed(0)} bytes (used_memory delta)`)
console.log(`  PostgreSQL  ${(Number(rows[0].bytes) / Number(rows[0].n)).toFixed(0)} bytes (table + indexes / rows)`)

const keys = await redis.keys(`bench-journal:${runId}:*`)
for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000))
for (const name of tables) await pool.query(`DROP TABLE IF EXISTS ${name}`)
redis.disconnect()
await pool.end()
