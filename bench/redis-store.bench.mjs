// redisStore against memoryStore and a hand-written SET NX PX baseline (then SET of the done marker:
// the same two round trips per new event), store-level and through a core receiver. Several rounds
// in rotating order; medians. Uses REDIS_URL, or starts its own redis-server on a free port.
// Run: pnpm bench redis
import { createWebhooks, DEFAULT_RETENTION_MS, memoryStore } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { startRedis } from './redis-server.mjs'

const ROUNDS = 9
const CLAIMS = 20_000
const CONCURRENCY = 64
const SEQUENTIAL_EVENTS = 2_000
const RECEIVER_EVENTS = 4_000
const LEASE_MS = 900_000
const SECRET = 'whsec_bench'

/** The hand-written store one would write without payhooks: SET NX PX, then an unchecked SET of the marker. */
function baselineStore(redis, keyPrefix) {
  let counter = 0
  return {
    async claim(eventId, leaseMs) {
      const token = `b.${++counter}`
      const ok = await redis.set(keyPrefix + eventId, token, 'PX', leaseMs, 'NX')
      return ok ? { status: 'claimed', token } : { status: 'processing' }
    },
    async complete(eventId) {
      await redis.set(keyPrefix + eventId, 'done', 'PX', DEFAULT_RETENTION_MS)
      return true
    },
    async release(eventId) {
      return (await redis.del(keyPrefix + eventId)) === 1
    },
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

async function pool(count, concurrency, task) {
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++)
    }),
  )
}

const server = process.env.REDIS_URL ? undefined : await startRedis()
process.on('exit', () => server?.stop()) // also when a measure throws
const url = process.env.REDIS_URL ?? server.url
const redis = new Redis(url)
const admin = new Redis(url)
const commandCounts = new Map()
const sendCommand = redis.sendCommand.bind(redis)
redis.sendCommand = (command, stream) => {
  commandCounts.set(command.name, (commandCounts.get(command.name) ?? 0) + 1)
  return sendCommand(command, stream)
}
const commandStats = async () => {
  const stats = new Map()
  for (const match of (await admin.info('commandstats')).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    stats.set(match[1], { calls: Number(match[2]), usec: Number(match[3]) })
  }
  return stats
}

const runId = Date.now().toString(36)
let prefixCounter = 0
const variants = {
  memoryStore: () => memoryStore({ maxEntries: 1_000_000 }),
  'SET NX PX baseline': () => baselineStore(redis, `bench:${runId}:${++prefixCounter}:`),
  redisStore: () => redisStore(redis, { keyPrefix: `bench:${runId}:${++prefixCounter}:` }),
}
const names = Object.keys(variants)

const deliveries = await Promise.all(
  Array.from({ length: RECEIVER_EVENTS }, (_, i) =>
    signedDelivery(sampleEvent('transaction_settled', { eventId: `evt_${i}` }), SECRET),
  ),
)
const rawDeliveries = deliveries.map(({ body, headers }) => ({
  method: 'POST',
  body,
  getHeader: (name) => headers[name],
}))

// Each measure runs in chunks (single events for latencies), the variants taking turns chunk by
// chunk, so a noisy neighbour on the machine slows them all alike. `prepare` builds what one variant uses for one round.
const measures = {
  claimsPerSecond: {
    total: CLAIMS,
    chunk: 500,
    prepare: (store) => (from, to) => pool(to - from, CONCURRENCY, (i) => store.claim(`evt_${from + i}`, LEASE_MS)),
    value: (ms) => CLAIMS / (ms / 1000),
  },
  eventMicros: {
    total: SEQUENTIAL_EVENTS,
    chunk: 1,
    prepare: (store) => async (from, to) => {
      for (let i = from; i < to; i++) {
        const claim = await store.claim(`evt_${i}`, LEASE_MS)
        if (claim.status !== 'claimed') throw new Error(`unexpected ${claim.status}`)
        await store.complete(`evt_${i}`, claim.token)
      }
    },
    value: (ms) => (ms * 1000) / SEQUENTIAL_EVENTS,
  },
  receiverMicros: {
    total: SEQUENTIAL_EVENTS,
    chunk: 1,
    prepare: (store) => {
      const webhooks = createWebhooks({ secret: SECRET, store }).onAny(() => {})
      return async (from, to) => {
        for (let i = from; i < to; i++) {
          const result = await webhooks.receive(rawDeliveries[i])
          if (result.status !== 200) throw new Error(`receiver answered ${result.status}: ${result.body}`)
        }
      }
    },
    value: (ms) => (ms * 1000) / SEQUENTIAL_EVENTS,
  },
  receiverPerSecond: {
    total: RECEIVER_EVENTS,
    chunk: 500,
    prepare: (store) => {
      const webhooks = createWebhooks({ secret: SECRET, store }).onAny(() => {})
      return (from, to) =>
        pool(to - from, CONCURRENCY, async (i) => {
          const result = await webhooks.receive(rawDeliveries[from + i])
          if (result.status !== 200) throw new Error(`receiver answered ${result.status}: ${result.body}`)
        })
    },
    value: (ms) => RECEIVER_EVENTS / (ms / 1000),
  },
}

// Per new event through the receiver (claim, handler, completion): commands sent to Redis as counted
// by the client, and their Redis CPU time (INFO commandstats, scripts' inner commands included). A
// warm-up event first, so EVALSHA, not the first-use EVAL, is counted.
const PER_EVENT_RUNS = 1_000
const perEvent = { memoryStore: { roundTrips: 0, commands: '-', redisMicros: 0 } }
await Promise.all([redis.ping(), admin.ping()])
for (const name of names.slice(1)) {
  const webhooks = createWebhooks({ secret: SECRET, store: variants[name]() }).onAny(() => {})
  await webhooks.receive(rawDeliveries[0])
  commandCounts.clear()
  const before = await commandStats()
  for (let i = 1; i <= PER_EVENT_RUNS; i++) await webhooks.receive(rawDeliveries[i])
  const after = await commandStats()
  const sent = [...commandCounts.entries()]
  const usec = sent.reduce(
    (sum, [command]) => sum + (after.get(command)?.usec ?? 0) - (before.get(command)?.usec ?? 0),
    0,
  )
  perEvent[name] = {
    roundTrips: sent.reduce((sum, [, count]) => sum + count, 0) / PER_EVENT_RUNS,
    commands: sent.map(([command]) => command).join('+') || '-',
    redisMicros: usec / PER_EVENT_RUNS,
  }
}

const results = Object.fromEntries(
  names.map((name) => [name, Object.fromEntries(Object.keys(measures).map((m) => [m, []]))]),
)
const cpuResults = Object.fromEntries(
  names.map((name) => [name, Object.fromEntries(Object.keys(measures).map((m) => [m, []]))]),
)
for (let round = -1; round < ROUNDS; round++) {
  for (const [measure, { total, chunk, prepare, value }] of Object.entries(measures)) {
    const runs = names.map((name) => prepare(variants[name]()))
    const elapsed = names.map(() => 0)
    const cpu = names.map(() => 0)
    globalThis.gc?.()
    for (let from = 0, turn = 0; from < total; from += chunk, turn++) {
      for (let k = 0; k < names.length; k++) {
        const v = (k + turn + round + names.length) % names.length
        const cpuStart = process.cpuUsage()
        const start = performance.now()
        await runs[v](from, Math.min(from + chunk, total))
        elapsed[v] += performance.now() - start
        const { user, system } = process.cpuUsage(cpuStart)
        cpu[v] += user + system
      }
    }
    if (round < 0) continue // warm-up
    for (const [v, name] of names.entries()) {
      results[name][measure].push(value(elapsed[v]))
      cpuResults[name][measure].push(cpu[v] / total)
    }
  }
}

const med = (name, measure) => median(results[name][measure])
const base = 'SET NX PX baseline'
const fmt = (n, digits = 0) =>
  n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
const ratio = (name, measure, higherIsBetter) => {
  const r = med(name, measure) / med(base, measure)
  return `${fmt(higherIsBetter ? 1 / r : r, 2)}x`
}
const timing = names.map((name) => ({
  store: name,
  'claims/s c=64': fmt(med(name, 'claimsPerSecond')),
  'claim+complete µs': fmt(med(name, 'eventMicros'), 1),
  'vs base': ratio(name, 'eventMicros', false),
  'receive() µs': fmt(med(name, 'receiverMicros'), 1),
  'added vs memory µs': fmt(med(name, 'receiverMicros') - med('memoryStore', 'receiverMicros'), 1),
  'receive vs base': ratio(name, 'receiverMicros', false),
  'receive/s c=64': fmt(med(name, 'receiverPerSecond')),
  'cost vs base': ratio(name, 'receiverPerSecond', true),
}))
const costs = names.map((name) => ({
  store: name,
  'round trips/event': `${perEvent[name].roundTrips} (${perEvent[name].commands})`,
  'Redis CPU µs/event': fmt(perEvent[name].redisMicros, 1),
  'receiver CPU µs/event': fmt(median(cpuResults[name].receiverMicros), 1),
  'receiver CPU c=64': fmt(median(cpuResults[name].receiverPerSecond), 1),
}))

console.log(`node ${process.version}, redis ${url}, ${ROUNDS} rounds (medians), sequential = one event at a time`)
console.table(timing)
console.table(costs)
console.log(
  'vs base: time against the hand-written SET NX PX + SET baseline (1.00x = same, lower is better); cost vs base:\n' +
    'baseline events/s over this store’s. Per event: one new event through webhooks.receive(), claim + completion.',
)

// Leave a shared REDIS_URL server as it was found (SCAN here is clean-up, not the hot path).
let cursor = '0'
do {
  const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `bench:${runId}:*`, 'COUNT', 1000)
  cursor = nextCursor
  if (keys.length) await redis.unlink(...keys)
} while (cursor !== '0')
redis.disconnect()
admin.disconnect()
server?.stop()
