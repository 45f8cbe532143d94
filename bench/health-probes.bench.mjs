// What readiness probes cost the backend (issue 40): 1,000 probes through nodeHealth, 100 at a time, on redisStore
// with Redis dead letters, counted in Redis commands (INFO commandstats) and timed; the kit's shared checks (the
// default maxAgeMs, 1 s) vs every probe checking afresh (maxAgeMs: 0, what health() did before). Rounds alternate;
// medians. Uses REDIS_URL, or starts its own redis-server on a free port.
// Run: pnpm bench health-probes
import { createServer } from 'node:http'
import { createWebhooks } from '@payhooks/core'
import { nodeHealth } from '@payhooks/core/node'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { startRedis } from './redis-server.mjs'

const ROUNDS = 5
const PROBES = 1_000
const CONCURRENCY = 100

const server = process.env.REDIS_URL ? undefined : await startRedis()
process.on('exit', () => server?.stop())
const url = process.env.REDIS_URL ?? server.url
const redis = new Redis(url)
const counter = new Redis(url)
const runId = Date.now().toString(36)
const webhooks = createWebhooks({
  secret: 'whsec_bench_health_probes',
  store: redisStore(redis, { keyPrefix: `bench-probes:${runId}:` }),
  deadLetters: redisDeadLetterStore(redis, { keyPrefix: `{bench-probes-${runId}}:` }),
  checkAtStart: false,
})

async function commandsRun() {
  const info = await counter.info('commandstats')
  return [...info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)].reduce((sum, [, calls]) => sum + Number(calls), 0)
}

async function run(options) {
  const http = createServer(nodeHealth(webhooks, options)).listen(0, '127.0.0.1')
  await new Promise((resolve) => http.once('listening', resolve))
  const target = `http://127.0.0.1:${http.address().port}/ready`
  await new Promise((resolve) => setTimeout(resolve, 1100)) // past any check shared from the round before
  const before = await commandsRun()
  const started = performance.now()
  for (let sent = 0; sent < PROBES; sent += CONCURRENCY) {
    const answers = await Promise.all(Array.from({ length: CONCURRENCY }, () => fetch(target)))
    for (const answer of answers) {
      if (answer.status !== 200) throw new Error(`probe answered ${answer.status}`)
      await answer.arrayBuffer()
    }
  }
  const ms = performance.now() - started
  const commands = (await commandsRun()) - before - 1
  await new Promise((resolve) => http.close(resolve))
  return { commands, ms }
}

const variants = { 'shared (default)': {}, 'afresh (maxAgeMs: 0)': { maxAgeMs: 0 } }
const names = Object.keys(variants)
const results = Object.fromEntries(names.map((name) => [name, []]))
for (let round = 0; round < ROUNDS; round++) {
  for (let k = 0; k < names.length; k++) {
    const name = names[(k + round) % names.length]
    results[name].push(await run(variants[name]))
  }
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
console.log(
  `${PROBES} readiness probes, ${CONCURRENCY} at a time, redisStore + redisDeadLetterStore (${ROUNDS} rounds, medians)`,
)
for (const name of names) {
  const commands = median(results[name].map((r) => r.commands))
  const ms = median(results[name].map((r) => r.ms))
  console.log(`  ${name.padEnd(22)} ${String(commands).padStart(5)} Redis commands  ${ms.toFixed(0).padStart(6)} ms`)
}
await webhooks.close()
redis.disconnect()
counter.disconnect()
server?.stop()
