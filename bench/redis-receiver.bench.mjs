// What an event costs Redis and the receiver with redisStore, through a real receiver (issue 49): a core receiver on
// node:http (`nodeWebhooks`, as the README mounts it) in a child process, its handler doing nothing, loaded by
// autocannon at a fixed rate of fresh signed events (64 connections); the kit's redisStore against today's
// (BENCH_BASELINE, see bench/README.md). Each variant and round on a redis-server of its own (so no store meets
// another's keys), started by the bench. Per answered event: Redis CPU (used_cpu_user + sys from INFO) and its wake-ups
// (the server's voluntary context switches), the writes the receiver's Redis client made (each a system call and, for a
// sleeping Redis, a wake-up), the receiver's CPU, req/s and p99. Rounds in rotating order, medians. Where
// bench/redis-ordered chains each event's steps in one process, this is how a receiver's requests arrive: each in a
// callback of its own.
// Run: pnpm bench redis-receiver     (BENCH_RATES, default 3000,30000 req/s offered; BENCH_ROUNDS, default 3;
// BENCH_SECONDS per round, default 6; BENCH_CLUSTER=1: a three-primary Cluster per round instead, its servers' CPU and
// wake-ups summed; BENCH_LIVE=5: five generations of done markers live first, as after three days of traffic,
// BENCH_FILL events each, default 4,800; BENCH_CPU_PROF=<dir>: a CPU profile of each receiver there)
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { existsSync, readFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { basename, dirname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { sampleEvent } from '@payhooks/testing'
import autocannon from 'autocannon'
import { Cluster, Redis } from 'ioredis'
import { countRoundTrips } from '../test/fixtures/redis-round-trips.mjs'
import { SECRET, serveChild, signKit } from './http-load.mjs'
import { serverCpu, startCluster, startRedis } from './redis-server.mjs'

if (process.argv[2] === '--serve') {
  // The receiver: `--serve <store module> <redis url>`.
  const { createWebhooks } = await import('@payhooks/core')
  const { nodeWebhooks } = await import('@payhooks/core/node')
  const { redisStore } = await import(pathToFileURL(process.argv[3]).href)
  const target = process.argv[4]
  const redis = target.startsWith('[') ? new Cluster(JSON.parse(target)) : new Redis(target)
  redis.on('error', () => {}) // the bench stops its Redis once this process is told to go
  const trips = countRoundTrips(redis)
  let writes = 0
  const store = redisStore(redis, { keyPrefix: 'bench-receiver:', commandTimeoutMs: 60_000 })
  // BENCH_LIVE generations of done markers first, as after days of traffic: this process's clock (Date.now) moved
  // back a generation at a time (a quarter of the 73-hour retention), BENCH_FILL events handled in each.
  const live = Number(process.env.BENCH_LIVE ?? 0)
  const fill = Number(process.env.BENCH_FILL ?? 4800)
  const realNow = Date.now
  for (let g = 0; g < live; g++) {
    const shift = (live - 1 - g) * Math.ceil((73 * 3_600_000) / 4)
    Date.now = () => realNow() - shift
    let next = 0
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < fill) {
          const id = `evt_fill_${g}_${next++}`
          const claim = await store.claim(id, 60_000, 'ab'.repeat(16))
          if (claim.status === 'claimed') await store.complete(id, claim.token)
        }
      }),
    )
  }
  Date.now = realNow
  const webhooks = createWebhooks({ secret: SECRET, store })
  webhooks.onAny(async () => {})
  webhooks.onError((error) => process.stderr.write(`receiver: ${error.status} ${error.message}\n`))
  const server = createServer(nodeWebhooks(webhooks))
  server.keepAliveTimeout = 30_000
  process.on('message', (message) => {
    if (message !== 'writes') return
    writes += trips.take()
    process.send({ writes })
  })
  server.listen(0, '127.0.0.1', () => serveChild(server.address().port))
} else {
  const RATES = (process.env.BENCH_RATES ?? '3000,30000').split(',').map(Number)
  const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
  const SECONDS = Number(process.env.BENCH_SECONDS ?? 6)
  const CLUSTER = process.env.BENCH_CLUSTER === '1'
  const baselinePath = process.env.BENCH_BASELINE ?? join(import.meta.dirname, '../packages/redis/.baseline/index.js')
  const variants = { kit: join(import.meta.dirname, '../packages/redis/dist/index.js') }
  if (existsSync(baselinePath)) variants.today = baselinePath
  else console.log(`no baseline at ${baselinePath}: kit rows only (see bench/README.md)`)

  let counter = 0
  const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bench_@' }))
  const bodies = (count) =>
    Array.from({ length: count }, () => {
      const body = template.replace('evt_bench_@', `evt_bench_${++counter}`)
      return { body, headers: signKit(body) }
    })
  const ask = async (child, what) => {
    child.send(what)
    for (;;) {
      const [message] = await once(child, 'message')
      if (message?.[what] !== undefined) return message[what]
    }
  }

  async function round(path, rate) {
    const server = CLUSTER ? await startCluster() : await startRedis()
    const admins = CLUSTER ? server.nodes.map((node) => new Redis(node)) : [new Redis(server.url)]
    const pids = await Promise.all(admins.map(async (admin) => /process_id:(\d+)/.exec(await admin.info('server'))[1]))
    const wakes = () =>
      pids.reduce(
        (sum, pid) =>
          sum + Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]),
        0,
      )
    const redisCpu = () => serverCpu(admins)
    const profile = process.env.BENCH_CPU_PROF
    const child = fork(import.meta.filename, ['--serve', path, CLUSTER ? JSON.stringify(server.nodes) : server.url], {
      execArgv: profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}/${basename(dirname(path))}-${rate}`] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    const [{ port }] = await once(child, 'message')
    const load = (seconds) => {
      const list = bodies(Math.ceil(rate * seconds * 1.3) + 2000)
      let next = 0
      return autocannon({
        url: `http://127.0.0.1:${port}/webhooks`,
        connections: 64,
        duration: seconds,
        overallRate: rate,
        requests: [{ method: 'POST', setupRequest: (request) => ({ ...request, ...list[next++] }) }],
      })
    }
    await load(2)
    const before = [await redisCpu(), wakes(), await ask(child, 'cpu'), await ask(child, 'writes')]
    const result = await load(SECONDS)
    const after = [await redisCpu(), wakes(), await ask(child, 'cpu'), await ask(child, 'writes')]
    const exited = once(child, 'exit')
    child.disconnect()
    await exited
    for (const admin of admins) admin.disconnect()
    server.stop()
    const n = result.requests.total
    const per = (i) => (after[i] - before[i]) / n
    return {
      redisCpu: per(0),
      wakes: per(1),
      receiverCpu: per(2),
      writes: per(3),
      rps: result.requests.average,
      p99: result.latency.p99,
      failed: result.non2xx + result.errors + result.timeouts,
    }
  }

  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
  const f = (n, digits = 1) => n.toFixed(digits).padStart(8)
  for (const rate of RATES) {
    const names = Object.keys(variants)
    const results = Object.fromEntries(names.map((name) => [name, []]))
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(k + r) % names.length]
        results[name].push(await round(variants[name], rate))
      }
    }
    console.log(
      `\n${CLUSTER ? 'Cluster of three primaries, ' : ''}${rate} req/s offered, ${SECONDS} s x ${ROUNDS} rounds, per answered event (medians)`,
    )
    console.log('  variant   Redis CPU µs  Redis wakes   writes  receiver CPU µs     req/s   p99 ms  failed')
    for (const name of names) {
      const rows = results[name]
      const m = (key) => median(rows.map((row) => row[key]))
      console.log(
        `  ${name.padEnd(8)} ${f(m('redisCpu'))}     ${f(m('wakes'), 2)}  ${f(m('writes'), 2)}         ${f(m('receiverCpu'))}  ${f(m('rps'), 0)}  ${f(m('p99'), 0)}  ${rows.map((row) => row.failed).join('/')}`,
      )
    }
    if (results.today) {
      const ratio = (key) => median(results.kit.map((row, i) => row[key] / results.today[i][key])).toFixed(2)
      console.log(
        `  kit / today: Redis CPU ${ratio('redisCpu')}x, receiver CPU ${ratio('receiverCpu')}x, req/s ${ratio('rps')}x (medians of per-round ratios)`,
      )
    }
  }
  process.exit(0)
}
