// The Fastify plugin against a hand-written Fastify route in the same run: an encapsulated bytes parser
// (parseAs: 'buffer'), createHmac + timingSafeEqual, JSON.parse and a Set of seen event_ids. A third
// route, the same bytes parser around core's webhooks.receive, splits the gap between the plugin's glue
// and core's own per-event work. Each server runs in its own child process; autocannon (in this
// process) loads one at a time on 127.0.0.1, in short rounds that rotate the routes' order; medians
// reported. Every request carries a new, correctly signed event, so every route does its full work.
// Run: pnpm bench fastify (builds first; this file imports the built packages).
import { fork } from 'node:child_process'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { once } from 'node:events'
import { sampleEvent } from '@payhooks/testing'
import autocannon from 'autocannon'

const ROUNDS = 11
const VARIANTS = ['adapter', 'baseline', 'core']
const ROUND_SECONDS = 1.5
const WARMUP_SECONDS = 1
const CONNECTIONS = 10
/** More than any route here answers per second, so no body is sent twice. */
const BODIES_PER_SECOND = 60_000
const SECRET = 'whsec_bench'
const LIMIT = 1_048_576
const SIGNATURE_HEADER = 'service-hmac-sha256'

// ---- child: one server -------------------------------------------------------------------------

const sign = (body) => createHmac('sha256', SECRET).update(body).digest('hex').toUpperCase()

/** Takes every body as a Buffer, inside the calling plugin's context only, as the adapter does. */
function bytesParser(instance) {
  instance.removeAllContentTypeParsers()
  instance.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: LIMIT }, (_request, body, done) => {
    done(null, body)
  })
}

async function adapterReceiver() {
  const { createWebhooks, memoryStore } = await import('@payhooks/core')
  // Room for every event of the run, so the store never evicts; this bench measures the adapter.
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore({ maxEntries: 2_000_000 }) })
  webhooks.on('transaction_settled', () => {})
  return webhooks
}

async function serve(variant) {
  const { default: Fastify } = await import('fastify')
  const app = Fastify()
  if (variant === 'adapter') {
    const { fastifyWebhooks } = await import('@payhooks/fastify')
    await app.register(fastifyWebhooks, { webhooks: await adapterReceiver(), path: '/webhooks' })
  } else if (variant === 'core') {
    const webhooks = await adapterReceiver()
    await app.register(async (instance) => {
      bytesParser(instance)
      instance.post('/webhooks', async (request, reply) => {
        const result = await webhooks.receive({ body: request.body, getHeader: (name) => request.headers[name] })
        return reply.code(result.status).headers(result.headers).send(result.body)
      })
    })
  } else {
    const seen = new Set()
    await app.register(async (instance) => {
      bytesParser(instance)
      instance.post('/webhooks', async (request, reply) => {
        const signature = request.headers[SIGNATURE_HEADER]
        if (typeof signature !== 'string' || signature.length !== 64) {
          return reply.code(401).send({ error: 'invalid_signature' })
        }
        const expected = createHmac('sha256', SECRET).update(request.body).digest()
        if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) {
          return reply.code(401).send({ error: 'invalid_signature' })
        }
        const event = JSON.parse(request.body.toString('utf8'))
        if (seen.has(event.event_id)) return { ok: true, event_id: event.event_id, status: 'duplicate' }
        seen.add(event.event_id)
        return { ok: true, event_id: event.event_id, status: 'processed' }
      })
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app.server.address().port
}

// ---- parent: load and report -------------------------------------------------------------------

async function startServer(variant) {
  const child = fork(import.meta.filename, ['serve', variant], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const [message] = await once(child, 'message')
  return { child, url: `http://127.0.0.1:${message.port}` }
}

let eventCounter = 0
/** Fresh signed bodies, made before a round so the client spends no time signing while it measures. */
function makeBodies(count) {
  const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bench_@' }))
  return Array.from({ length: count }, () => {
    const body = template.replace('evt_bench_@', `evt_bench_${++eventCounter}`)
    return { body, signature: sign(body) }
  })
}

async function load(url, seconds) {
  const bodies = makeBodies(BODIES_PER_SECOND * seconds)
  let next = 0
  let reused = 0
  const result = await autocannon({
    url: `${url}/webhooks`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest(request) {
          if (next === bodies.length) {
            next = 0
            reused++
          }
          const { body, signature } = bodies[next++]
          return { ...request, body, headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature } }
        },
      },
    ],
  })
  const failures = result.non2xx + result.errors + result.timeouts
  return { rps: result.requests.average, p99: result.latency.p99, failures, reused }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

async function main() {
  console.log(
    `${ROUNDS} rounds of ${ROUND_SECONDS} s per route (after ${WARMUP_SECONDS} s warm-up), ${CONNECTIONS} connections, ` +
      `Node ${process.version}; each request a new signed transaction_settled event.\n`,
  )
  const running = {}
  for (const variant of VARIANTS) running[variant] = await startServer(variant)
  const samples = Object.fromEntries(VARIANTS.map((variant) => [variant, []]))
  let problems = 0
  try {
    for (const variant of VARIANTS) await load(running[variant].url, WARMUP_SECONDS)
    for (let round = 0; round < ROUNDS; round++) {
      const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length])
      if (round % 2) order.reverse()
      for (const variant of order) {
        const sample = await load(running[variant].url, ROUND_SECONDS)
        if (sample.failures || sample.reused) {
          problems++
          console.log(`${variant}: ${sample.failures} non-2XX/errors, ${sample.reused} reused bodies`)
        }
        samples[variant].push(sample)
      }
    }
  } finally {
    for (const variant of VARIANTS) running[variant].child.kill()
  }
  const rps = (variant) => samples[variant].map((s) => s.rps)
  // Ratios within a round (seconds apart), then their median: sturdier on a machine loaded in bursts.
  const ratio = (a, b) => `${median(rps(a).map((value, i) => value / rps(b)[i])).toFixed(2)}x`
  console.log(
    `req/s per round: ${VARIANTS.map(
      (v) =>
        `${v} ${rps(v)
          .map((x) => x.toFixed(0))
          .join(' ')}`,
    ).join('; ')}`,
  )
  const header = ['route', 'req/s', 'p99 ms', 'vs baseline']
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
  const names = { adapter: 'fastifyWebhooks plugin', baseline: 'hand-written route', core: 'bytes parser + receive()' }
  for (const variant of VARIANTS) {
    const p99 = median(samples[variant].map((s) => s.p99)).toFixed(1)
    console.log(`| ${names[variant]} | ${median(rps(variant)).toFixed(0)} | ${p99} | ${ratio(variant, 'baseline')} |`)
  }
  console.log(
    `\nreq/s and p99: medians over the rounds; ratios: median of the per-round ratios. Target: plugin 0.90x or more.` +
      `\nPlugin vs bytes parser + receive() (the glue's share): ${ratio('adapter', 'core')}`,
  )
  if (problems) {
    console.log(`${problems} round(s) had failed requests or reused bodies: see above.`)
    process.exit(1)
  }
}

if (process.argv[2] === 'serve') {
  const port = await serve(process.argv[3])
  process.on('disconnect', () => process.exit(0))
  process.send({ port })
} else {
  await main()
}
