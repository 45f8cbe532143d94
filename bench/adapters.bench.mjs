// Each framework adapter's route against a hand-written route in the same framework that reads the raw
// body, checks the HMAC (createHmac + timingSafeEqual) and parses JSON. Every server runs in its own
// child process; autocannon (in this process) loads one at a time on 127.0.0.1, in short rounds that
// rotate the routes' order; medians reported. Every request carries a new, correctly signed
// event, so the adapter does its full work (verify, parse, validate, claim, handler, complete).
// A third route, hand-written glue around core's webhooks.receive, splits the gap between the adapter
// glue and core's own per-event work.
// Run: pnpm bench adapters (builds first; this file imports the built packages).
import { fork } from 'node:child_process'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { once } from 'node:events'
import { sampleEvent } from '@payhooks/testing'
import autocannon from 'autocannon'

const FRAMEWORKS = ['express', 'koa', 'hono']
const ROUNDS = 7
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

/** The check a hand-written route does: HMAC of the raw bytes, constant-time compare, JSON.parse. */
function baselineCheck(raw, signature) {
  if (typeof signature !== 'string' || signature.length !== 64) return undefined
  const expected = createHmac('sha256', SECRET).update(raw).digest()
  if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return undefined
  return JSON.parse(raw.toString('utf8'))
}

async function adapterReceiver() {
  const { createWebhooks, memoryStore } = await import('@payhooks/core')
  // Room for every event of the run: at its default 100 000 entries memoryStore starts evicting, and
  // its eviction currently slows down as it goes (see the report); this bench measures the adapters.
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore({ maxEntries: 2_000_000 }) })
  webhooks.on('transaction_settled', () => {})
  return webhooks
}

const servers = {
  async express(variant) {
    const { default: express } = await import('express')
    const app = express()
    if (variant === 'adapter') {
      const { expressWebhooks } = await import('@payhooks/express')
      app.post('/webhooks', expressWebhooks(await adapterReceiver()))
    } else if (variant === 'core') {
      const { default: getRawBody } = await import('raw-body')
      const webhooks = await adapterReceiver()
      app.post('/webhooks', async (req, res) => {
        const body = await getRawBody(req, { length: req.headers['content-length'], limit: LIMIT })
        const result = await webhooks.receive({ body, getHeader: (name) => req.headers[name] })
        res.status(result.status).set(result.headers).send(result.body)
      })
    } else {
      const { default: getRawBody } = await import('raw-body')
      app.post('/webhooks', async (req, res) => {
        const raw = await getRawBody(req, { length: req.headers['content-length'], limit: LIMIT })
        const event = baselineCheck(raw, req.headers[SIGNATURE_HEADER])
        if (!event) return res.status(401).json({ error: 'invalid_signature' })
        res.json({ ok: true, event_id: event.event_id })
      })
    }
    const server = app.listen(0, '127.0.0.1')
    await once(server, 'listening')
    return server.address().port
  },
  async koa(variant) {
    const { default: Koa } = await import('koa')
    const { default: Router } = await import('@koa/router')
    const router = new Router()
    if (variant === 'adapter') {
      const { koaWebhooks } = await import('@payhooks/koa')
      router.post('/webhooks', koaWebhooks(await adapterReceiver()))
    } else if (variant === 'core') {
      const { default: getRawBody } = await import('raw-body')
      const webhooks = await adapterReceiver()
      router.post('/webhooks', async (ctx) => {
        const body = await getRawBody(ctx.req, { length: ctx.get('content-length'), limit: LIMIT })
        const result = await webhooks.receive({ body, getHeader: (name) => ctx.req.headers[name] })
        ctx.status = result.status
        ctx.set(result.headers)
        ctx.body = result.body
      })
    } else {
      const { default: getRawBody } = await import('raw-body')
      router.post('/webhooks', async (ctx) => {
        const raw = await getRawBody(ctx.req, { length: ctx.get('content-length'), limit: LIMIT })
        const event = baselineCheck(raw, ctx.get(SIGNATURE_HEADER))
        ctx.status = event ? 200 : 401
        ctx.body = event ? { ok: true, event_id: event.event_id } : { error: 'invalid_signature' }
      })
    }
    const server = new Koa().use(router.routes()).listen(0, '127.0.0.1')
    await once(server, 'listening')
    return server.address().port
  },
  async hono(variant) {
    const { Hono } = await import('hono')
    const { serve } = await import('@hono/node-server')
    const app = new Hono()
    if (variant === 'adapter') {
      const { honoWebhooks } = await import('@payhooks/hono')
      app.post('/webhooks', honoWebhooks(await adapterReceiver()))
    } else if (variant === 'core') {
      const webhooks = await adapterReceiver()
      app.post('/webhooks', async (c) => {
        const body = new Uint8Array(await c.req.arrayBuffer())
        const result = await webhooks.receive({ body, getHeader: (name) => c.req.raw.headers.get(name) })
        return new Response(result.body, { status: result.status, headers: { ...result.headers } })
      })
    } else {
      app.post('/webhooks', async (c) => {
        const raw = Buffer.from(await c.req.arrayBuffer())
        const event = baselineCheck(raw, c.req.header(SIGNATURE_HEADER))
        return event ? c.json({ ok: true, event_id: event.event_id }) : c.json({ error: 'invalid_signature' }, 401)
      })
    }
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
    await once(server, 'listening')
    return server.address().port
  },
}

// ---- parent: load and report -------------------------------------------------------------------

async function startServer(framework, variant) {
  const child = fork(import.meta.filename, ['serve', framework, variant], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
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
          return {
            ...request,
            body,
            headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
          }
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
  const rows = []
  const coreRows = []
  let problems = 0
  for (const framework of FRAMEWORKS) {
    const running = {}
    for (const variant of VARIANTS) running[variant] = await startServer(framework, variant)
    const samples = Object.fromEntries(VARIANTS.map((variant) => [variant, []]))
    try {
      for (const variant of VARIANTS) await load(running[variant].url, WARMUP_SECONDS)
      for (let round = 0; round < ROUNDS; round++) {
        // Rotate the order so no route always runs first (or right after the same neighbour).
        const order = VARIANTS.map((_, i) => VARIANTS[(i + round) % VARIANTS.length])
        if (round % 2) order.reverse()
        for (const variant of order) {
          const sample = await load(running[variant].url, ROUND_SECONDS)
          if (sample.failures || sample.reused) {
            problems++
            console.log(`${framework} ${variant}: ${sample.failures} non-2XX/errors, ${sample.reused} reused bodies`)
          }
          samples[variant].push(sample)
        }
      }
    } finally {
      for (const variant of VARIANTS) running[variant].child.kill()
    }
    const rps = (variant) => samples[variant].map((s) => s.rps)
    // Ratios are taken within a round (runs seconds apart), then their median: sturdier than a ratio
    // of medians when other processes load the machine in bursts.
    const ratio = (a, b) => `${median(rps(a).map((value, i) => value / rps(b)[i])).toFixed(2)}x`
    coreRows.push([framework, median(rps('core')).toFixed(0), ratio('core', 'baseline'), ratio('adapter', 'core')])
    rows.push([
      framework,
      median(rps('adapter')).toFixed(0),
      median(rps('baseline')).toFixed(0),
      ratio('adapter', 'baseline'),
      median(samples.adapter.map((s) => s.p99)).toFixed(1),
      median(samples.baseline.map((s) => s.p99)).toFixed(1),
    ])
    console.log(
      `${framework} req/s per round: ${VARIANTS.map((v) => `${v} ${samples[v].map((s) => s.rps.toFixed(0)).join(' ')}`).join('; ')}`,
    )
  }
  const header = ['framework', 'adapter req/s', 'baseline req/s', 'ratio', 'adapter p99 ms', 'baseline p99 ms']
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
  for (const row of rows) console.log(`| ${row.join(' | ')} |`)
  console.log(
    '\nreq/s and p99: medians over the rounds; ratio: median of the per-round adapter / baseline ratios. Target: 0.90x or more.',
  )
  console.log('\nWhere the gap is: the same framework, hand-written glue around webhooks.receive.\n')
  const coreHeader = ['framework', 'glue+receive req/s', "vs baseline (core's share)", "adapter vs it (glue's share)"]
  console.log(`| ${coreHeader.join(' | ')} |\n|${coreHeader.map(() => '---').join('|')}|`)
  for (const row of coreRows) console.log(`| ${row.join(' | ')} |`)
  if (problems) {
    console.log(`${problems} round(s) had failed requests or reused bodies: see above.`)
    process.exit(1)
  }
}

if (process.argv[2] === 'serve') {
  const [, , , framework, variant] = process.argv
  const port = await servers[framework](variant)
  process.on('disconnect', () => process.exit(0))
  process.send({ port })
} else {
  await main()
}
