// Capacity per core (issue 40, item 5; docs/guide/capacity.md): signed deliveries through `webhooks.receive()` in
// this process, 16 at a time, handlers doing nothing, on each store: memoryStore (the receiver alone), redisStore on
// standalone Redis, postgresStore; unordered, and ordered (a rule keyed by transaction id, an ordering key per event).
// Per event: the receiver's CPU (process.cpuUsage: verify, parse, dispatch, the store's client; signing is done
// before), the round trips to the backend (commands sent by ioredis; statements sent by pg, BEGIN and COMMIT
// included), and Redis's own CPU (INFO cpu). Events per second per core are 1e6 / CPU µs: what one core busy with
// nothing else takes. Rounds alternate; medians. Starts its own redis-server and PostgreSQL unless REDIS_URL /
// DATABASE_URL name them. Run: pnpm bench capacity     (BENCH_EVENTS per round, default 3000; BENCH_ROUNDS, 3)
import { createWebhooks, memoryStore } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { startRedis } from './redis-server.mjs'

const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONCURRENCY = 16
const SECRET = 'whsec_capacity_bench'

const redisServer = process.env.REDIS_URL ? undefined : await startRedis()
const pgServer = process.env.DATABASE_URL ? undefined : await startPostgres()
process.on('exit', () => {
  redisServer?.stop()
  pgServer?.stop()
})
const redis = new Redis(process.env.REDIS_URL ?? redisServer.url)
const admin = new Redis(process.env.REDIS_URL ?? redisServer.url)
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL ?? pgServer.url,
  max: CONCURRENCY + 2,
  connectionTimeoutMillis: 2000,
})

// Round trips: every command ioredis sends, every statement pg sends.
const sent = { redis: 0, postgres: 0 }
const sendCommand = redis.sendCommand.bind(redis)
redis.sendCommand = (...args) => {
  sent.redis++
  return sendCommand(...args)
}
const query = pg.Client.prototype.query
pg.Client.prototype.query = function (...args) {
  sent.postgres++
  return query.apply(this, args)
}
const redisCpu = async () => {
  const info = await admin.info('cpu')
  return (Number(/used_cpu_user:([\d.]+)/.exec(info)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)[1])) * 1e6
}

const runId = Date.now().toString(36)
const ordering = {
  transaction_settled: { key: (e) => e.data.transaction_id, at: (e) => e.created_at },
}
const stores = {
  memory: () => memoryStore(),
  redis: (round) => redisStore(redis, { keyPrefix: `bench-capacity:${runId}:${round}:` }),
  postgres: (round) => postgresStore(pool, { table: `bench_capacity_${runId}_${round}` }),
}

async function deliveries(label, count) {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const event = sampleEvent('transaction_settled', { eventId: `evt_${label}_${i}` })
      const { body, headers } = await signedDelivery(event, SECRET)
      return { method: 'POST', body, getHeader: (name) => headers[name] }
    }),
  )
}

async function round(storeName, ordered, label) {
  const webhooks = createWebhooks({
    secret: SECRET,
    store: stores[storeName](label),
    ...(ordered ? { ordering } : {}),
    checkAtStart: false,
  })
  webhooks.on('transaction_settled', () => {})
  const warm = await deliveries(`${label}w`, 100)
  for (const delivery of warm) await webhooks.receive(delivery) // init, tables, scripts
  const batch = await deliveries(label, EVENTS)
  const backend = storeName === 'postgres' ? 'postgres' : 'redis'
  const [sent0, redis0, cpu0] = [sent[backend], await redisCpu(), process.cpuUsage()]
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < batch.length) {
        const answer = await webhooks.receive(batch[next++])
        if (answer.status !== 200) throw new Error(`${label}: answered ${answer.status} ${answer.body}`)
      }
    }),
  )
  const cpu = process.cpuUsage(cpu0)
  const result = {
    cpu: (cpu.user + cpu.system) / EVENTS,
    trips: storeName === 'memory' ? 0 : (sent[backend] - sent0) / EVENTS,
    redisCpu: backend === 'redis' && storeName !== 'memory' ? ((await redisCpu()) - redis0) / EVENTS : undefined,
  }
  await webhooks.close()
  return result
}

const variants = ['memory', 'redis', 'postgres'].flatMap((store) => [
  [store, false],
  [store, true],
])
const results = new Map(variants.map((v) => [v.join(), []]))
for (let r = 0; r < ROUNDS; r++) {
  for (const [k, [store, ordered]] of variants.entries()) {
    results.get([store, ordered].join()).push(await round(store, ordered, `r${r}v${k}`))
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
console.log(`receive() of signed deliveries, ${EVENTS} events x ${ROUNDS} rounds, ${CONCURRENCY} at a time (medians)`)
console.log(
  '  store      events      receiver CPU µs  events/s per core  round trips  Redis CPU µs  events/s per Redis core',
)
for (const [store, ordered] of variants) {
  const rows = results.get([store, ordered].join())
  const cpu = median(rows.map((row) => row.cpu))
  const trips = median(rows.map((row) => row.trips))
  const rcpu = rows[0].redisCpu === undefined ? undefined : median(rows.map((row) => row.redisCpu))
  console.log(
    `  ${store.padEnd(10)} ${(ordered ? 'ordered' : 'unordered').padEnd(11)} ${cpu.toFixed(1).padStart(10)}  ${String(Math.round(1e6 / cpu)).padStart(16)}  ${trips.toFixed(1).padStart(11)}  ${rcpu === undefined ? '           -' : rcpu.toFixed(1).padStart(12)}  ${rcpu === undefined ? '' : String(Math.round(1e6 / rcpu)).padStart(22)}`,
  )
}
for (const table of (
  await pool.query(`SELECT tablename FROM pg_tables WHERE tablename LIKE 'bench_capacity_${runId}%'`)
).rows) {
  await pool.query(`DROP TABLE IF EXISTS ${table.tablename} CASCADE`)
}
await pool.end()
redis.disconnect()
admin.disconnect()
redisServer?.stop()
pgServer?.stop()
process.exit(0)
