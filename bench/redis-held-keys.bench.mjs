// What the index of held ordering keys (redisStore.heldKeys, issue 32) costs an ordered event: claim + complete of
// events with an ordering position, 64 in flight, with the index's steps vs the same store with those steps
// stubbed out (what an ordered claim cost before the index), and unordered claims for scale. Rounds in rotating
// order; medians of per-round ratios. Uses REDIS_URL, or starts its own redis-server on a free port.
// Run: pnpm bench held-keys
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { startRedis } from './redis-server.mjs'

const ROUNDS = 7
const EVENTS = 4_000
const CONCURRENCY = 64
const LEASE_MS = 60_000

const server = process.env.REDIS_URL ? undefined : await startRedis()
process.on('exit', () => server?.stop())
const redis = new Redis(process.env.REDIS_URL ?? server.url)
const runId = Date.now().toString(36)
const store = redisStore(redis, { keyPrefix: `bench-held:${runId}:` })
const indexStep = redis.payhooksHeldStep

async function run(label, ordered) {
  let next = 0
  const start = performance.now()
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < EVENTS) {
        const i = next++
        const eventId = `${label}:${i}`
        const position = ordered ? { key: `${label}:k${i}`, at: i, eventType: 'transaction_settled' } : undefined
        const claim = await store.claim(eventId, LEASE_MS, undefined, position)
        if (claim.status !== 'claimed') throw new Error(`unexpected ${claim.status}`)
        await store.complete(eventId, claim.token)
      }
    }),
  )
  return ((performance.now() - start) * 1000) / EVENTS
}

const variants = {
  unordered: (round) => run(`u${round}`, false),
  'ordered, no index': async (round) => {
    redis.payhooksHeldStep = async () => 1
    try {
      return await run(`n${round}`, true)
    } finally {
      redis.payhooksHeldStep = indexStep
    }
  },
  'ordered, with index': (round) => run(`o${round}`, true),
}
const names = Object.keys(variants)
const results = Object.fromEntries(names.map((name) => [name, []]))
for (let round = -1; round < ROUNDS; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + round + names.length) % names.length]
    const micros = await variants[name](round)
    if (round >= 0) results[name].push(micros)
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
const ratios = results['ordered, with index'].map((v, i) => v / results['ordered, no index'][i])
console.log(`redisStore, claim + complete per event, ${CONCURRENCY} in flight (${ROUNDS} rounds, medians)`)
for (const name of names) console.log(`  ${name.padEnd(22)} ${median(results[name]).toFixed(1)} µs`)
console.log(`  with index / no index  ${median(ratios).toFixed(2)}x (median of per-round ratios)`)
redis.disconnect()
server?.stop()
