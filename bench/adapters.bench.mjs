// Each framework adapter's route against a hand-written route in the same framework that reads the raw
// body, checks the HMAC (createHmac + timingSafeEqual), parses JSON and remembers event ids in a Set.
// Every server runs in its own child process; autocannon (in this process) loads one at a time on
// 127.0.0.1, in short rounds that rotate the routes' order; medians reported. Every request carries a
// new, correctly signed event, so the adapter does its full work (verify, parse, validate, claim,
// handler, complete). A third route, hand-written glue around core's webhooks.receive, splits the gap
// between the adapter glue and core's own per-event work.
// Run: pnpm bench adapters (builds first; this file imports the built packages). BENCH_FRAMEWORKS=koa,hono runs
// only those frameworks.
import { once } from 'node:events'
import {
  compareRounds,
  handWrittenCheck,
  LIMIT,
  SECRET,
  SIGNATURE_HEADER,
  serveChild,
  startServer,
  stopServers,
} from './http-load.mjs'

const FRAMEWORKS = ['express', 'koa', 'hono', 'fastify'].filter(
  (name) => !process.env.BENCH_FRAMEWORKS || process.env.BENCH_FRAMEWORKS.split(',').includes(name),
)
const ROUNDS = 7
const VARIANTS = ['adapter', 'baseline', 'core']
const ROUND_SECONDS = 1.5
const WARMUP_SECONDS = 1
const CONNECTIONS = 10

// ---- child: one server -------------------------------------------------------------------------

const baselineCheck = handWrittenCheck()

async function adapterReceiver() {
  const { createWebhooks, memoryStore } = await import('@payhooks/core')
  // Room for every event of the run, so the store never evicts: this bench measures the adapters.
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
        res.json(event)
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
        ctx.body = event ?? { error: 'invalid_signature' }
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
        return event ? c.json(event) : c.json({ error: 'invalid_signature' }, 401)
      })
    }
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
    await once(server, 'listening')
    return server.address().port
  },
  async fastify(variant) {
    const { default: Fastify } = await import('fastify')
    const app = Fastify()
    /** Takes every body as a Buffer, inside the calling plugin's context only, as the adapter does. */
    const bytesParser = (instance) => {
      instance.removeAllContentTypeParsers()
      instance.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: LIMIT }, (_request, body, done) => {
        done(null, body)
      })
    }
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
      await app.register(async (instance) => {
        bytesParser(instance)
        instance.post('/webhooks', async (request, reply) => {
          const event = baselineCheck(request.body, request.headers[SIGNATURE_HEADER])
          return event ?? reply.code(401).send({ error: 'invalid_signature' })
        })
      })
    }
    await app.listen({ port: 0, host: '127.0.0.1' })
    return app.server.address().port
  },
}

// ---- parent: load and report -------------------------------------------------------------------

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
    for (const variant of VARIANTS) {
      running[variant] = await startServer(import.meta.filename, ['serve', framework, variant])
    }
    let result
    try {
      result = await compareRounds(running, {
        label: framework,
        rounds: ROUNDS,
        roundSeconds: ROUND_SECONDS,
        warmupSeconds: WARMUP_SECONDS,
        connections: CONNECTIONS,
      })
    } finally {
      stopServers(running)
    }
    const { ratio, medianRps, medianP99, medianCpu, cpuRatio } = result
    console.log(
      `${framework} server CPU µs/request: ${VARIANTS.map((v) => `${v} ${medianCpu(v)}`).join(', ')}; baseline/adapter ${cpuRatio('adapter', 'baseline')}`,
    )
    problems += result.problems
    coreRows.push([framework, medianRps('core'), ratio('core', 'baseline'), ratio('adapter', 'core')])
    rows.push([
      framework,
      medianRps('adapter'),
      medianRps('baseline'),
      ratio('adapter', 'baseline'),
      medianP99('adapter'),
      medianP99('baseline'),
    ])
  }
  const header = ['framework', 'adapter req/s', 'baseline req/s', 'ratio', 'adapter p99 ms', 'baseline p99 ms']
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
  for (const row of rows) console.log(`| ${row.join(' | ')} |`)
  console.log(
    '\nreq/s and p99: medians over the rounds; ratio: median of the per-round adapter / baseline ratios. Targets: Koa and Fastify 0.90x or more, Express and Hono 0.95x or more.',
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
  serveChild(await servers[framework](variant))
} else {
  await main()
}
