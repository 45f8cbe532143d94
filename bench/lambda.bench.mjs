// Per-invocation cost of the Lambda handler against calling webhooks.receive() directly with the body and
// a header lookup already in hand, for the event kinds AWS sends: API Gateway HTTP API / function URL
// (payload 2.0), REST API (payload 1.0, mixed-case headers), and ALB with a base64 body. Each
// invocation carries a new, correctly signed event, so both do core's full work (verify, parse,
// validate, claim, handler, complete). The two take turns in chunks of 500 events; medians over rounds.
// Run: pnpm bench lambda (builds first; this file imports the built packages).
import { createWebhooks, memoryStore, sign } from '@payhooks/core'
import { lambdaWebhooks } from '@payhooks/lambda'
import { sampleEvent } from '@payhooks/testing'

const SECRET = 'whsec_bench'
const PER_ROUND = 20_000
const ROUNDS = 7
const CHUNK = 500

const kinds = {
  'HTTP API / function URL (2.0)': (body, signature) => ({
    version: '2.0',
    routeKey: '$default',
    rawPath: '/webhooks',
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      host: 'r3pmxmplak.execute-api.us-east-2.amazonaws.com',
      'service-hmac-sha256': signature,
      'user-agent': 'payment-service-webhooks/1.0',
      'x-forwarded-for': '192.0.2.1',
    },
    requestContext: {
      http: { method: 'POST', path: '/webhooks', protocol: 'HTTP/1.1', sourceIp: '192.0.2.1' },
      requestId: 'JKJaXmPLvHcESHA=',
      stage: '$default',
    },
    body,
    isBase64Encoded: false,
  }),
  'REST API (1.0)': (body, signature) => {
    const headers = {
      'Content-Type': 'application/json',
      Host: 'r3pmxmplak.execute-api.us-east-2.amazonaws.com',
      'Service-Hmac-Sha256': signature,
      'User-Agent': 'payment-service-webhooks/1.0',
      'X-Forwarded-For': '192.0.2.1',
    }
    return {
      resource: '/webhooks',
      path: '/webhooks',
      httpMethod: 'POST',
      headers,
      multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
      requestContext: { httpMethod: 'POST', path: '/prod/webhooks', stage: 'prod' },
      body,
      isBase64Encoded: false,
    }
  },
  'ALB, base64 body': (body, signature) => ({
    requestContext: { elb: { targetGroupArn: 'arn:aws:elasticloadbalancing:us-east-2:123456789012:targetgroup/t/1' } },
    httpMethod: 'POST',
    path: '/webhooks',
    headers: { host: 'lambda-alb.us-east-2.elb.amazonaws.com', 'service-hmac-sha256': signature },
    body: Buffer.from(body).toString('base64'),
    isBase64Encoded: true,
  }),
}

let handled = 0
function receiver() {
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore({ maxEntries: 2_000_000 }) })
  webhooks.on('transaction_settled', (event) => {
    handled += event.data.settlement_amount > 0 ? 1 : 0
  })
  return webhooks
}

async function makeInputs(kind, tag) {
  const inputs = []
  for (let i = 0; i < PER_ROUND; i++) {
    const body = JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_${tag}_${i}` }))
    const signature = await sign(SECRET, body)
    // What receive() is given directly: the body as received and a lookup on lower-case names.
    const headers = { 'content-type': 'application/json', 'service-hmac-sha256': signature }
    inputs.push({ event: kinds[kind](body, signature), body, headers })
  }
  return inputs
}

const variants = {
  'lambdaWebhooks(event)': () => {
    const handler = lambdaWebhooks(receiver())
    return async (inputs) => {
      for (const { event } of inputs) {
        const result = await handler(event)
        if (result.statusCode !== 200) throw new Error(`handler answered ${result.statusCode}: ${result.body}`)
      }
    }
  },
  'receive() directly': () => {
    const webhooks = receiver()
    return async (inputs) => {
      for (const { body, headers } of inputs) {
        const result = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name] })
        if (result.status !== 200) throw new Error(`receive answered ${result.status}: ${result.body}`)
      }
    }
  },
}
const names = Object.keys(variants)

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const rows = []
for (const kind of Object.keys(kinds)) {
  const micros = Object.fromEntries(names.map((name) => [name, []]))
  const ratios = []
  for (let round = 0; round < ROUNDS + 1; round++) {
    // Both variants take turns in short chunks, so a burst of load elsewhere hits both alike.
    const run = {}
    const inputs = {}
    const nanos = {}
    for (const name of names) {
      run[name] = variants[name]()
      inputs[name] = await makeInputs(kind, `${round}_${name.length}`)
      nanos[name] = 0n
    }
    globalThis.gc?.()
    for (let at = 0; at < PER_ROUND; at += CHUNK) {
      for (const name of (at / CHUNK) % 2 ? [...names].reverse() : names) {
        const start = process.hrtime.bigint()
        await run[name](inputs[name].slice(at, at + CHUNK))
        nanos[name] += process.hrtime.bigint() - start
      }
    }
    if (round === 0) continue // warms up the JIT
    const perEvent = (name) => Number(nanos[name]) / 1e3 / PER_ROUND
    for (const name of names) micros[name].push(perEvent(name))
    ratios.push(perEvent('lambdaWebhooks(event)') / perEvent('receive() directly'))
  }
  rows.push({
    event: kind,
    'handler µs/event': median(micros['lambdaWebhooks(event)']).toFixed(2),
    'receive() µs/event': median(micros['receive() directly']).toFixed(2),
    'handler / receive()': `${median(ratios).toFixed(2)}x`,
  })
}

console.log(
  `Node ${process.version}, ${PER_ROUND} fresh signed transaction_settled events per round and variant, ` +
    `${ROUNDS} rounds (+1 warm-up), turns of ${CHUNK}; medians, ratio = median of per-round ratios.\n`,
)
console.table(rows)
console.log(`(${handled} events reached a handler)`)
