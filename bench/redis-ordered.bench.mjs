// What an ordered event costs on Redis (issue 40, item 3; issue 49's layout against the previous one, unordered too): claim + complete of events with an ordering position (a key
// of their own each), 16 in flight, the kit's redisStore against today's (BENCH_BASELINE: the built index.js of
// @payhooks/redis at an earlier commit; see bench/README.md), on standalone Redis and on a three-primary Cluster; an
// unordered event for scale. Per event: round trips (an event alone, one at a time: the client's writes, a pipeline
// or a corked batch as one), writes (the client's, with 16 in flight: events in flight in one turn of the event loop
// share them, packages/redis/src/coalesce.ts), Redis CPU (used_cpu_user +
// sys of every server, from INFO), client CPU (process.cpuUsage) and wall time. Rounds in rotating order, medians.
// Starts its own redis-server and Cluster unless REDIS_URL / REDIS_CLUSTER_NODES name them.
// Run: pnpm bench redis-ordered     (BENCH_ROUNDS, default 5; BENCH_EVENTS per round, default 2000)
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import * as kit from '@payhooks/redis'
import { Cluster, Redis } from 'ioredis'
import { countRoundTrips } from '../test/fixtures/redis-round-trips.mjs'
import { serverCpu, startCluster, startRedis } from './redis-server.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const EVENTS = Number(process.env.BENCH_EVENTS ?? 2000)
const CONCURRENCY = 16
const baselinePath = process.env.BENCH_BASELINE ?? join(import.meta.dirname, '../packages/redis/.baseline/index.js')
const baseline = existsSync(baselinePath) ? await import(pathToFileURL(baselinePath).href) : undefined
if (!baseline) console.log(`no baseline at ${baselinePath}: kit rows only (see bench/README.md)`)

const server = process.env.REDIS_URL ? undefined : await startRedis()
const cluster = await startCluster()
process.on('exit', () => {
  server?.stop()
  cluster.stop()
})
const standaloneUrl = new URL(process.env.REDIS_URL ?? server.url)
const targets = {
  standalone: {
    connect: () => new Redis(standaloneUrl.href),
    servers: [{ host: standaloneUrl.hostname, port: Number(standaloneUrl.port) }],
  },
  cluster: { connect: () => new Cluster(cluster.nodes), servers: cluster.nodes },
}

const runId = Date.now().toString(36)
async function round(target, module, label, ordered, admins) {
  const client = targets[target].connect()
  // a long commandTimeoutMs: the bench measures costs, and a loaded machine must not end it
  const store = module.redisStore(client, { keyPrefix: `bench-ordered:${runId}:${label}:`, commandTimeoutMs: 60_000 })
  const runOne = async (i) => {
    const position = ordered
      ? { key: `txn_${i}`, at: 1_764_000_000_000 + i, eventType: 'transaction_settled' }
      : undefined
    const claim = await store.claim(`evt_${i}`, 60_000, 'ab'.repeat(16), position)
    if (claim.status !== 'claimed') throw new Error(`${label}: evt_${i} was ${claim.status}`)
    await store.complete(`evt_${i}`, claim.token)
  }
  const run = async (from, count) => {
    let next = from
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < from + count) await runOne(next++)
      }),
    )
  }
  await run(0, 200) // connects, loads the scripts on every server
  const trips = countRoundTrips(client)
  // Round trips: one event at a time (a Cluster's slots each met once above), as an event alone costs them.
  for (let i = 500; i < 540; i++) await runOne(i)
  const alone = trips.take() / 40
  const [cpu0, client0, start] = [await serverCpu(admins), process.cpuUsage(), performance.now()]
  await run(1000, EVENTS)
  const wall = performance.now() - start
  const clientCpu = process.cpuUsage(client0)
  const redisCpu = (await serverCpu(admins)) - cpu0
  client.disconnect()
  return {
    trips: alone,
    writes: trips.take() / EVENTS,
    redisCpu: redisCpu / EVENTS,
    clientCpu: (clientCpu.user + clientCpu.system) / EVENTS,
    wall: (wall * 1000) / EVENTS,
  }
}

const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
const f = (n) => n.toFixed(1).padStart(7)
for (const target of Object.keys(targets)) {
  const admins = targets[target].servers.map(({ host, port }) => new Redis({ host, port }))
  const variants = { 'kit, ordered': [kit, true], 'kit, unordered': [kit, false] }
  if (baseline) {
    variants['today, ordered'] = [baseline, true]
    variants['today, unordered'] = [baseline, false]
  }
  const names = Object.keys(variants)
  const results = Object.fromEntries(names.map((name) => [name, []]))
  for (let r = 0; r < ROUNDS; r++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(k + r) % names.length]
      const [module, ordered] = variants[name]
      results[name].push(await round(target, module, `${target}-${r}-${k}`, ordered, admins))
    }
  }
  console.log(`\n${target}: per event, ${EVENTS} events x ${ROUNDS} rounds, ${CONCURRENCY} in flight (medians)`)
  console.log('  variant            round trips   writes   Redis CPU µs  client CPU µs   wall µs')
  for (const name of names) {
    const rows = results[name]
    const m = (key) => median(rows.map((row) => row[key]))
    console.log(
      `  ${name.padEnd(18)} ${f(m('trips'))}  ${f(m('writes'))}       ${f(m('redisCpu'))}        ${f(m('clientCpu'))}   ${f(m('wall'))}`,
    )
  }
  if (baseline) {
    for (const kind of ['ordered', 'unordered']) {
      const ratio = (key) =>
        median(results[`kit, ${kind}`].map((row, i) => row[key] / results[`today, ${kind}`][i][key])).toFixed(2)
      console.log(
        `  kit / today, ${kind}: Redis CPU ${ratio('redisCpu')}x, client CPU ${ratio('clientCpu')}x, wall ${ratio('wall')}x (medians of per-round ratios)`,
      )
    }
  }
  for (const admin of admins) admin.disconnect()
}
server?.stop()
cluster.stop()
process.exit(0)
