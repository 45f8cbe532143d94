// The kit's Express adapter against the peer libraries' own ways of receiving webhooks in Express (issue 23):
// octokit's createNodeMiddleware, stripe's express.raw() + constructEvent, standard-webhooks' express.raw() +
// Webhook#verify, each as its README or docs show it. Every server runs on Express in its own child process;
// every request carries the same payload (a new transaction_settled event from @payhooks/testing, a new event id
// each), signed the way that library expects, before each round; every handler reads data.settlement_amount.
// So the only difference is the library: the kit also validates the event against its schema, dedupes by
// event_id and answers with the delivery's outcome, which the peers leave to the app. The kit runs mounted both
// ways its README shows: `kit` as app-wide middleware answering its path (as octokit's is mounted), `kit-route`
// with app.post; the target compares `kit` with the best peer.
//   pnpm bench express-peers   (BENCH_ROUNDS: rounds, default 7; BENCH_CONNECTIONS: default 10;
//   BENCH_CPU_PROF=<dir>: each server's CPU profile there)
import { createHmac } from 'node:crypto'
import { once } from 'node:events'
import { loadavg } from 'node:os'
import { compareRounds, SECRET, serveChild, signKit, startServer, stopServers } from './http-load.mjs'

const ROUNDS = Number(process.env.BENCH_ROUNDS) || 7
const ROUND_SECONDS = 2
const WARMUP_SECONDS = 2
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS) || 10
const PEERS = ['octokit', 'stripe', 'standard-webhooks']
/** `kit` is mounted as octokit's middleware is (`app.use`, answering its path); `kit-route` with `app.post`. */
const VARIANTS = ['kit', 'kit-route', ...PEERS]
const TARGET = 1.05
/** Standard Webhooks secrets are base64 (`whsec_` prefixed): these decode to the same key bytes as SECRET. */
const STANDARD_SECRET = `whsec_${Buffer.from(SECRET).toString('base64')}`

// ---- parent: each library's signing, done before a round ---------------------------------------

const hmac = (data) => createHmac('sha256', SECRET).update(data)
const json = { 'content-type': 'application/json' }

const signers = {
  kit: signKit,
  'kit-route': signKit,
  /** GitHub's: `x-hub-signature-256: sha256=<hex>` over the body, the event name and a delivery id. */
  octokit: (body, eventId) => ({
    ...json,
    'x-github-event': 'transaction_settled',
    'x-github-delivery': eventId,
    'x-hub-signature-256': `sha256=${hmac(body).digest('hex')}`,
  }),
  /** Stripe's: `t=<seconds>,v1=<hex of HMAC("<t>.<body>")>`. */
  stripe: (body) => {
    const t = Math.floor(Date.now() / 1000)
    return { ...json, 'stripe-signature': `t=${t},v1=${hmac(`${t}.${body}`).digest('hex')}` }
  },
  /** Standard Webhooks': `v1,<base64 of HMAC("<id>.<t>.<body>")>`. */
  'standard-webhooks': (body, eventId) => {
    const t = Math.floor(Date.now() / 1000)
    return {
      ...json,
      'webhook-id': eventId,
      'webhook-timestamp': String(t),
      'webhook-signature': `v1,${hmac(`${eventId}.${t}.${body}`).digest('base64')}`,
    }
  },
}

// ---- child: one server -------------------------------------------------------------------------

/** What every handler does with the event, so no engine can drop the read as dead code. */
const last = { amount: 0 }
const refused = (res) => res.status(400).type('text/plain').send('signature verification failed')

const routes = {
  async kit(app) {
    const { expressWebhooks } = await import('@payhooks/express')
    // Mounted as octokit's is (app-wide middleware answering its path): the kit's README shows both forms.
    app.use(expressWebhooks(await kitReceiver(), { path: '/webhooks' }))
  },
  async 'kit-route'(app) {
    const { expressWebhooks } = await import('@payhooks/express')
    app.post('/webhooks', expressWebhooks(await kitReceiver()))
  },
  async octokit(app) {
    const { Webhooks, createNodeMiddleware } = await import('@octokit/webhooks')
    // The payment service's event name is not one of GitHub's: octokit would warn about it once at start-up.
    const webhooks = new Webhooks({ secret: SECRET, log: { warn() {} } })
    webhooks.on('transaction_settled', ({ payload }) => {
      last.amount = payload.data.settlement_amount
    })
    // `log` (octokit's default but for `error`) only quiets the preflight's tampered body, logged with its stack.
    const log = { debug() {}, info() {}, warn: console.warn, error() {} }
    app.use(createNodeMiddleware(webhooks, { path: '/webhooks', log }))
  },
  async stripe(app) {
    const { default: express } = await import('express')
    const { default: Stripe } = await import('stripe')
    // constructEvent needs no API call; the key is never used.
    const stripe = new Stripe('sk_test_bench')
    app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
      let event
      try {
        event = stripe.webhooks.constructEvent(req.body, req.headers['stripe-signature'], SECRET)
      } catch {
        return refused(res)
      }
      last.amount = event.data.settlement_amount
      res.json({ received: true })
    })
  },
  async 'standard-webhooks'(app) {
    const { default: express } = await import('express')
    const { Webhook } = await import('standardwebhooks')
    const wh = new Webhook(STANDARD_SECRET)
    app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
      let event
      try {
        event = wh.verify(req.body, req.headers)
      } catch {
        return refused(res)
      }
      last.amount = event.data.settlement_amount
      res.json({ received: true })
    })
  },
}

async function kitReceiver() {
  const { createWebhooks, memoryStore } = await import('@payhooks/core')
  // Room for every event of the run, so the store never evicts: this bench measures the request path.
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore({ maxEntries: 2_000_000 }) })
  webhooks.on('transaction_settled', (event) => {
    last.amount = event.data.settlement_amount
  })
  webhooks.onError(() => {}) // the preflight's tampered body: answered 401, not logged
  return webhooks
}

async function serve(variant) {
  const { default: express } = await import('express')
  const app = express()
  await routes[variant](app)
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  return server.address().port
}

// ---- parent: load and report -------------------------------------------------------------------

/**
 * One correctly signed request must be answered 2XX and one whose body was changed after signing must not, by
 * every server: a signing mistake shows here with its answer, and no server wins by skipping the check.
 */
async function preflight(running) {
  const { sampleEvent } = await import('@payhooks/testing')
  const problems = []
  for (const [variant, { url, signRequest }] of Object.entries(running)) {
    const eventId = `evt_preflight_${variant}`
    const body = JSON.stringify(sampleEvent('transaction_settled', { eventId }))
    const headers = signRequest(body, eventId)
    const good = await post(url, headers, body)
    if (!good.ok) problems.push(`${variant}: a signed event was answered ${good.status} ${await good.text()}`)
    const tampered = await post(url, headers, body.replace(eventId, `${eventId}x`))
    if (tampered.status < 400) problems.push(`${variant}: a body changed after signing was answered ${tampered.status}`)
  }
  return problems
}

const post = (url, headers, body) => fetch(`${url}/webhooks`, { method: 'POST', headers, body })

async function main() {
  const loadAverage = () =>
    loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')
  console.log(
    `${ROUNDS} rounds of ${ROUND_SECONDS} s per server (after ${WARMUP_SECONDS} s warm-up), ${CONNECTIONS} connections, ` +
      `Node ${process.version}, load average ${loadAverage()}; each request a new signed transaction_settled event.\n`,
  )
  const running = {}
  for (const variant of VARIANTS) {
    running[variant] = await startServer(import.meta.filename, ['serve', variant])
    running[variant].signRequest = signers[variant]
  }
  let result
  try {
    const problems = await preflight(running)
    if (problems.length) {
      console.log(`preflight failed:\n${problems.join('\n')}`)
      process.exitCode = 1
      return
    }
    result = await compareRounds(running, {
      label: 'express',
      rounds: ROUNDS,
      roundSeconds: ROUND_SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
    })
  } finally {
    stopServers(running)
  }
  report(result)
  console.log(`\nload average at the end: ${loadAverage()}`)
  if (result.problems) {
    console.log(`${result.problems} round(s) had non-2XX answers, errors or reused bodies: see above.`)
    process.exitCode = 1
  }
}

function report({ ratio, medianRps, medianP99, medianCpu, cpuRatio }) {
  const header = ['server', 'req/s', 'p99 ms', 'server CPU µs/req', 'kit / this (req/s)', 'CPU this / kit']
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
  for (const v of VARIANTS) {
    const vsKit = v === 'kit' ? ['—', '—'] : [ratio('kit', v), cpuRatio('kit', v)]
    console.log(`| ${v} | ${medianRps(v)} | ${medianP99(v)} | ${medianCpu(v)} | ${vsKit.join(' | ')} |`)
  }
  const rps = (v) => Number(medianRps(v))
  const best = PEERS.reduce((a, b) => (rps(b) > rps(a) ? b : a))
  const kitVsBest = ratio('kit', best)
  const met = Number.parseFloat(kitVsBest) > TARGET ? 'met' : 'not met'
  console.log(
    '\nreq/s, p99, CPU: medians over the rounds; kit / this: median of the per-round req/s ratios; CPU this / kit: ' +
      "median of the per-round ratios of server CPU per request (above 1: the peer's request costs more).",
  )
  console.log(
    `kit / best peer: ${kitVsBest} (target > ${TARGET.toFixed(2)}x): ${met}; best peer ${best}, ${rps(best)} req/s`,
  )
}

if (process.argv[2] === 'serve') {
  serveChild(await serve(process.argv[3]))
} else {
  await main()
}
