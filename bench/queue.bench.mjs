// Acknowledgement rate and latency of one receiver over node:http on 127.0.0.1 when every handler
// takes 2 s: queue mode (bullmqQueue; the worker runs in another process and consumes during the run)
// against inline mode (handlers before the answer), side by side. autocannon offers a fixed 500
// requests/s (overallRate) for 10 s after a 3 s warm-up, each request a fresh pre-signed event, in
// two arrival patterns (see load()). Medians of alternating rounds. Starts its own redis-server on a
// free port when REDIS_URL is unset, and stops it afterwards.
//   pnpm bench queue
// BENCH_QUEUE=queue/burst,inline/burst runs only those mode/arrival pairs (and `express` only the comparison with a
// hand-written Express + BullMQ route in bench/queue-express.mjs, which runs first); BENCH_ROUNDS=5 sets the rounds.
import { fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import http from 'node:http'
import { fileURLToPath } from 'node:url'
import { bullmqQueue, startWorker } from '@payhooks/bullmq'
import { createWebhooks, memoryStore, SIGNATURE_HEADER, sign } from '@payhooks/core'
import { redisStore } from '@payhooks/redis'
import { sampleEvent } from '@payhooks/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { compareWithHandWritten } from './queue-express.mjs'
import { pacedLoad } from './queue-load.mjs'
import { startRedis } from './redis-server.mjs'

const SECRET = 'whsec_bench_queue'
const RATE = 500
const DURATION_S = 10
const WARMUP_S = 3
const ROUNDS = Number(process.env.BENCH_ROUNDS) || 3
const HANDLER_MS = 2000
const WORKER_CONCURRENCY = 1200
const SPREAD = 20
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
const role = process.argv[2]

if (role === 'receiver') await receiver()
else if (role === 'worker') await worker()
else await main()

/** One receiver process: node:http in front of `webhooks.receive`. */
async function receiver() {
  const { MODE, REDIS_URL, QUEUE_NAME, QUEUE_PREFIX } = process.env
  const queue =
    MODE === 'queue' ? bullmqQueue({ connection: REDIS_URL, name: QUEUE_NAME, prefix: QUEUE_PREFIX }) : undefined
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore({ maxEntries: 200_000 }), queue })
  if (MODE === 'inline') webhooks.onAny(() => sleep(HANDLER_MS))
  const errors = new Map()
  webhooks.onError((error) => errors.set(error.code, (errors.get(error.code) ?? 0) + 1))
  if (queue) await queue.ready()
  const server = http.createServer((req, res) => {
    const chunks = []
    req.on('data', (chunk) => chunks.push(chunk))
    req.on('end', async () => {
      const result = await webhooks.receive({
        method: req.method,
        body: Buffer.concat(chunks),
        getHeader: (name) => req.headers[name],
      })
      res.writeHead(result.status, result.headers)
      res.end(result.body)
    })
  })
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
  process.on('message', async (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage()
      process.send({ cpu: user + system })
    }
    if (message !== 'stop') return
    process.send({ errors: Object.fromEntries(errors) })
    server.closeAllConnections()
    server.close()
    await queue?.close()
    process.exit(0)
  })
}

/** One worker process: the same handler (2 s), run from the queue. */
async function worker() {
  const { REDIS_URL, QUEUE_NAME, QUEUE_PREFIX, STORE_PREFIX } = process.env
  const redis = new Redis(REDIS_URL)
  const webhooks = createWebhooks({
    secret: SECRET,
    store: redisStore(redis, { keyPrefix: STORE_PREFIX }),
    leaseMs: 120_000,
  })
  let handled = 0
  webhooks.onAny(async () => {
    await sleep(HANDLER_MS)
    handled++
  })
  const running = startWorker(webhooks, {
    connection: REDIS_URL,
    name: QUEUE_NAME,
    prefix: QUEUE_PREFIX,
    concurrency: WORKER_CONCURRENCY,
  })
  await running.ready()
  process.send({ ready: true })
  process.on('message', async (message) => {
    if (message === 'stats') process.send({ handled })
    if (message !== 'stop') return
    await running.close(true)
    redis.disconnect()
    process.exit(0)
  })
}

function child(args, env) {
  const proc = fork(fileURLToPath(import.meta.url), args, { env: { ...process.env, ...env } })
  const next = (key) =>
    new Promise((resolve, reject) => {
      const onMessage = (message) => {
        if (!(key in message)) return
        proc.off('message', onMessage)
        proc.off('exit', onExit)
        resolve(message)
      }
      const onExit = (code) => reject(new Error(`${args[0]} exited with ${code} before sending ${key}`))
      proc.on('message', onMessage)
      proc.once('exit', onExit)
    })
  return { proc, next }
}

async function ask(proc, message, key = message) {
  const reply = proc.next(key)
  proc.proc.send(message)
  return reply
}

function load(port, arrival, nextBody, durationS) {
  return pacedLoad(port, {
    arrival,
    rate: RATE,
    spread: SPREAD,
    durationS,
    nextBody,
    signatureHeader: SIGNATURE_HEADER,
  })
}

async function signedBodies(tag, count) {
  const bodies = []
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_${tag}_${i}` }))
    bodies.push({ body, signature: await sign(SECRET, body) })
  }
  return bodies
}

async function round(mode, arrival, index, redisUrl) {
  const tag = `${mode}-${arrival}-${index}-${randomUUID().slice(0, 8)}`
  const env = {
    REDIS_URL: redisUrl,
    QUEUE_NAME: `bench-${tag}`,
    QUEUE_PREFIX: `payhooks-bench-${tag}`,
    STORE_PREFIX: `payhooks-bench-store:${tag}:`,
  }
  const bodies = await signedBodies(tag, RATE * (WARMUP_S + DURATION_S + 5))
  let next = 0
  const workerProc = mode === 'queue' ? child(['worker'], env) : undefined
  if (workerProc) await workerProc.next('ready')
  const receiverProc = child(['receiver'], { ...env, MODE: mode })
  const { port } = await receiverProc.next('port')

  const nextBody = () => bodies[next++ % bodies.length]
  await load(port, arrival, nextBody, WARMUP_S)
  const cpuBefore = (await ask(receiverProc, 'cpu')).cpu
  const handledBefore = workerProc ? (await ask(workerProc, 'stats', 'handled')).handled : 0
  const result = await load(port, arrival, nextBody, DURATION_S)
  const cpu = ((await ask(receiverProc, 'cpu')).cpu - cpuBefore) / (DURATION_S * 10_000)
  if (next > bodies.length) console.warn(`  (${mode}: ${next - bodies.length} bodies reused)`)

  const handled = workerProc ? (await ask(workerProc, 'stats', 'handled')).handled - handledBefore : result.ok
  receiverProc.proc.send('stop')
  const { errors } = await receiverProc.next('errors')
  workerProc?.proc.send('stop')
  await Promise.all([once(receiverProc.proc, 'exit'), workerProc && once(workerProc.proc, 'exit')])

  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null })
  const queue = new Queue(env.QUEUE_NAME, { connection: redis, prefix: env.QUEUE_PREFIX })
  await queue.obliterate({ force: true }).catch(() => {})
  await queue.close()
  for (let cursor = '0', first = true; first || cursor !== '0'; first = false) {
    const [nextCursor, keys] = await redis.scan(cursor, 'MATCH', `${env.STORE_PREFIX}*`, 'COUNT', 1000)
    cursor = nextCursor
    if (keys.length > 0) await redis.del(...keys)
  }
  redis.disconnect()

  const row = { ackPerS: result.ok / DURATION_S, p50: result.p50, p99: result.p99, non2xx: result.failed, handled }
  console.log(
    `  round ${index + 1} ${`${mode}/${arrival}`.padEnd(13)} ack/s ${row.ackPerS.toFixed(0).padStart(4)}  p50 ${row.p50.toFixed(1).padStart(7)} ms  p99 ${row.p99.toFixed(1).padStart(7)} ms  non-2xx ${row.non2xx}  handled ${handled}  receiver CPU ${cpu.toFixed(0)}%  ${JSON.stringify(errors)}`,
  )
  return row
}

async function main() {
  const own = process.env.REDIS_URL ? undefined : await startRedis()
  const redisUrl = process.env.REDIS_URL || own.url
  const only = process.env.BENCH_QUEUE?.split(',')
  const configs = [
    ['queue', 'spread'],
    ['inline', 'spread'],
    ['queue', 'burst'],
    ['inline', 'burst'],
  ].filter((c) => !only || only.includes(c.join('/')))
  try {
    if (!only || only.includes('express')) {
      console.log(
        `Queue mode vs a hand-written Express + BullMQ route, in bursts; Redis ${redisUrl}${own ? ' (own)' : ''}`,
      )
      await compareWithHandWritten(redisUrl)
    }
    if (configs.length > 0) await queueVersusInline(configs, redisUrl, own !== undefined)
  } finally {
    await own?.stop()
  }
}

async function queueVersusInline(configs, redisUrl, ownRedis) {
  console.log(
    `\nQueue vs inline mode: ${RATE} requests/s for ${DURATION_S} s per round (autocannon overallRate, ${RATE} connections), handler ${HANDLER_MS} ms, ${ROUNDS} rounds, Redis ${redisUrl}${ownRedis ? ' (own)' : ''}`,
  )
  const rows = new Map(configs.map((c) => [c.join('/'), []]))
  for (let i = 0; i < ROUNDS; i++) {
    for (const [mode, arrival] of configs) rows.get(`${mode}/${arrival}`).push(await round(mode, arrival, i, redisUrl))
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const labels = {
    queue: `queue (bullmqQueue; 1 worker process, concurrency ${WORKER_CONCURRENCY})`,
    inline: 'inline (handler runs before the answer)',
  }
  const arrivals = {
    spread: `spread: ${SPREAD} × ${RATE / SPREAD} every ${1000 / SPREAD} ms`,
    burst: `burst: ${RATE} at once each second`,
  }
  console.log(
    `\nmedians of ${ROUNDS} rounds, ${RATE} requests/s offered for ${DURATION_S} s, handler ${HANDLER_MS} ms\n`,
  )
  console.log('| mode | arrival | ack/s | p50 ms | p99 ms | non-2xx | handled in the run |')
  console.log('| --- | --- | ---: | ---: | ---: | ---: | ---: |')
  for (const [mode, arrival] of configs) {
    const list = rows.get(`${mode}/${arrival}`)
    const m = (key) => median(list.map((r) => r[key]))
    console.log(
      `| ${labels[mode]} | ${arrivals[arrival]} | ${m('ackPerS').toFixed(0)} | ${m('p50').toFixed(1)} | ${m('p99').toFixed(1)} | ${m('non2xx')} | ${m('handled')} |`,
    )
  }
}
