// Queue mode in bursts against a hand-written Express route that verifies the signature and calls BullMQ's `add`
// directly, on the same Redis: 500 simultaneous deliveries each second (autocannon overallRate over 500
// connections), the kit through @payhooks/express with bullmqQueue, batching off and on. No worker consumes:
// this measures the acknowledgement. Each server runs in its own child process (this file, forked with a
// variant); rounds rotate the variants' order; p99 per variant and the median of per-round p99 ratios to the
// hand-written route. Run through bench/queue.bench.mjs (BENCH_QUEUE=express runs only this part).
import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { sampleEvent } from '@payhooks/testing'
import { Queue } from 'bullmq'
import { Redis } from 'ioredis'
import { LIMIT, median, SECRET, SIGNATURE_HEADER, serveChild, sign, startServer } from './http-load.mjs'
import { pacedLoad } from './queue-load.mjs'

const BURST = 500
const ROUND_S = 5
const WARMUP_S = 2
const ROUNDS = Number(process.env.BENCH_ROUNDS) || 5
const VARIANTS = ['hand-written', 'kit', 'kit-batch']
const LABELS = {
  'hand-written': "hand-written Express route: raw-body, createHmac + timingSafeEqual, JSON.parse, BullMQ's add",
  kit: '@payhooks/express + bullmqQueue()',
  'kit-batch': '@payhooks/express + bullmqQueue({ batch: true })',
}
// The kit's defaults, so both write the same jobs.
const JOB_OPTIONS = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 5000 },
  removeOnComplete: { age: 86_400, count: 10_000 },
  removeOnFail: { age: 2_592_000 },
}

if (process.argv[2] === 'express-server') await serve(...process.argv.slice(3))

/** A child: one Express server of `variant` on queue `QUEUE_NAME` under `QUEUE_PREFIX` of `REDIS_URL`. */
async function serve(variant, REDIS_URL, QUEUE_NAME, QUEUE_PREFIX) {
  const { default: express } = await import('express')
  const app = express()
  if (variant === 'hand-written') {
    const { default: getRawBody } = await import('raw-body')
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null })
    const queue = new Queue(QUEUE_NAME, { connection, prefix: QUEUE_PREFIX, defaultJobOptions: JOB_OPTIONS })
    await queue.waitUntilReady()
    app.post('/webhooks', async (req, res) => {
      const raw = await getRawBody(req, { length: req.headers['content-length'], limit: LIMIT })
      const signature = req.headers[SIGNATURE_HEADER]
      const expected = createHmac('sha256', SECRET).update(raw).digest()
      const given = typeof signature === 'string' && signature.length === 64 ? Buffer.from(signature, 'hex') : undefined
      if (!given || !timingSafeEqual(expected, given)) return res.status(401).json({ error: 'invalid_signature' })
      const event = JSON.parse(raw.toString('utf8'))
      try {
        await queue.add(event.event_type, event, { jobId: event.event_id })
      } catch {
        return res.status(503).json({ error: 'unavailable' })
      }
      res.json({ ok: true, event_id: event.event_id, status: 'queued' })
    })
  } else {
    const { createWebhooks } = await import('@payhooks/core')
    const { expressWebhooks } = await import('@payhooks/express')
    const { bullmqQueue } = await import('@payhooks/bullmq')
    const batch = variant === 'kit-batch'
    const queue = bullmqQueue({ connection: REDIS_URL, name: QUEUE_NAME, prefix: QUEUE_PREFIX, batch })
    await queue.ready()
    // The receiver does not touch its store in queue mode (the workers' is what counts): no warning about it.
    const logger = { error: console.error, warn() {} }
    app.post('/webhooks', expressWebhooks(createWebhooks({ secret: SECRET, queue, logger })))
  }
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  serveChild(server.address().port)
}

let counter = 0
const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_burst_@' }))
/** Signed bodies made before the load, each a new event. */
function bodies(count) {
  return Array.from({ length: count }, () => {
    const body = template.replace('evt_burst_@', `evt_burst_${process.pid}_${++counter}`)
    return { body, signature: sign(body) }
  })
}

async function cpuOf(child) {
  child.send('cpu')
  for (;;) {
    const [message] = await once(child, 'message')
    if (typeof message?.cpu === 'number') return message.cpu
  }
}

async function burstLoad({ child, url }, seconds) {
  const port = Number(new URL(url).port)
  const list = bodies(BURST * (seconds + 1))
  let next = 0
  const cpuBefore = await cpuOf(child)
  const nextBody = () => list[next++ % list.length]
  const result = await pacedLoad(port, {
    arrival: 'burst',
    rate: BURST,
    durationS: seconds,
    nextBody,
    signatureHeader: SIGNATURE_HEADER,
  })
  const answered = result.ok + result.failed
  return { ...result, cpuUs: ((await cpuOf(child)) - cpuBefore) / answered, reused: next > list.length }
}

/** Runs the comparison on `redisUrl` and prints its table. */
export async function compareWithHandWritten(redisUrl) {
  const tag = randomUUID().slice(0, 8)
  const queues = Object.fromEntries(
    VARIANTS.map((v) => [v, { QUEUE_NAME: `bench-burst-${v}-${tag}`, QUEUE_PREFIX: `payhooks-bench-burst-${tag}` }]),
  )
  const file = fileURLToPath(import.meta.url)
  const running = {}
  try {
    for (const variant of VARIANTS) {
      const { QUEUE_NAME, QUEUE_PREFIX } = queues[variant]
      running[variant] = await startServer(file, ['express-server', variant, redisUrl, QUEUE_NAME, QUEUE_PREFIX])
    }
    for (const variant of VARIANTS) await burstLoad(running[variant], WARMUP_S)
    const samples = Object.fromEntries(VARIANTS.map((v) => [v, []]))
    for (let round = 0; round < ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length])
      for (const variant of order) {
        const sample = await burstLoad(running[variant], ROUND_S)
        samples[variant].push(sample)
        console.log(
          `  round ${round + 1} ${variant.padEnd(12)} p50 ${sample.p50.toFixed(1).padStart(6)} ms  p99 ${sample.p99.toFixed(1).padStart(6)} ms  CPU ${sample.cpuUs.toFixed(0)} µs/delivery  non-2xx ${sample.failed}${sample.reused ? '  (bodies reused)' : ''}`,
        )
      }
    }
    printTable(samples)
  } finally {
    for (const { child } of Object.values(running)) child.kill()
    await cleanUp(redisUrl, queues)
  }
}

function printTable(samples) {
  const base = samples['hand-written']
  const m = (variant, key) => median(samples[variant].map((s) => s[key]))
  const ratio = (variant, key) => median(samples[variant].map((s, i) => s[key] / base[i][key]))
  console.log(
    `\nmedians of ${ROUNDS} rotating rounds, ${BURST} simultaneous deliveries each second for ${ROUND_S} s per round, no worker\n`,
  )
  console.log(
    '| route | p50 ms | p99 ms | p99 / hand-written | receiver CPU µs per delivery | CPU / hand-written | non-2xx |',
  )
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const variant of VARIANTS) {
    console.log(
      `| ${LABELS[variant]} | ${m(variant, 'p50').toFixed(1)} | ${m(variant, 'p99').toFixed(1)} | ${ratio(variant, 'p99').toFixed(2)}x | ${m(variant, 'cpuUs').toFixed(0)} | ${ratio(variant, 'cpuUs').toFixed(2)}x | ${samples[variant].reduce((n, s) => n + s.failed, 0)} |`,
    )
  }
  console.log('\ntarget (issue 23): kit p99 ≤ 1.1x hand-written; kit with batch below 1.0x')
}

async function cleanUp(redisUrl, queues) {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: null })
  for (const { QUEUE_NAME, QUEUE_PREFIX } of Object.values(queues)) {
    const queue = new Queue(QUEUE_NAME, { connection: redis, prefix: QUEUE_PREFIX })
    await queue.obliterate({ force: true }).catch(() => {})
    await queue.close()
  }
  redis.disconnect()
}
