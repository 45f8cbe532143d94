// Per-event cost of @payhooks/core against a hand-written receiver (node:crypto HMAC + JSON.parse + a Set),
// measured side by side in one run, alternating, several rounds; medians reported. The telemetry rows run the same
// receiver with openTelemetry() of @payhooks/otel: with the OpenTelemetry API loaded and no SDK registered (what a
// library costs an application that does not trace), and with an SDK recording every span (sampled, batched to an
// exporter that drops them) and metric; 'vs core' compares them with the receiver without telemetry.
//   pnpm bench core
import { createHmac, timingSafeEqual } from 'node:crypto'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { createWebhooks, memoryStore, sign } from '@payhooks/core'
import { openTelemetry } from '@payhooks/otel'
import { sampleEvent } from '@payhooks/testing'

const SECRET = 'whsec_bench'
const PER_ROUND = 20_000
const ROUNDS = 7

async function makeEvents(tag, count) {
  const events = []
  for (let i = 0; i < count; i++) {
    const body = Buffer.from(JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_${tag}_${i}` })))
    events.push({ body, signature: await sign(SECRET, body) })
  }
  return events
}

let handled = 0

function baselineReceiver() {
  const seen = new Set()
  return (body, signature) => {
    if (typeof signature !== 'string' || !/^[0-9A-Fa-f]{64}$/.test(signature)) return 401
    const expected = Buffer.from(signature, 'hex')
    const actual = createHmac('sha256', SECRET).update(body).digest()
    if (!timingSafeEqual(actual, expected)) return 401
    const event = JSON.parse(body.toString('utf8'))
    if (seen.has(event.event_id)) return 200
    seen.add(event.event_id)
    handled += event.data.settlement_amount > 0 ? 1 : 0
    return 200
  }
}

// Never registered globally: the 'no SDK' rows see the API's no-op providers.
const discard = { export: (_spans, done) => done({ code: 0 }), shutdown: async () => {} }
const recording = {
  tracerProvider: new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(discard)] }),
  meterProvider: new MeterProvider({
    readers: [
      new PeriodicExportingMetricReader({
        exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
        exportIntervalMillis: 3_600_000,
      }),
    ],
  }),
}

function coreReceiver(telemetry) {
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), telemetry })
  webhooks.on('transaction_settled', (event) => {
    handled += event.data.settlement_amount > 0 ? 1 : 0
  })
  return webhooks
}

const variants = {
  'baseline (raw bytes)': async (events) => {
    const receive = baselineReceiver()
    for (const { body, signature } of events) {
      if (receive(body, signature) !== 200) throw new Error('baseline rejected')
    }
  },
  'core receive() (raw bytes)': (events) => receiveAll(coreReceiver(), events),
  'core receive() + otel, no SDK (raw bytes)': (events) => receiveAll(coreReceiver(openTelemetry()), events),
  'baseline (Request -> Response)': async (events) => {
    const receive = baselineReceiver()
    for (const { body, signature } of events) {
      const request = new Request('http://localhost/webhooks', {
        method: 'POST',
        body,
        headers: { 'service-hmac-sha256': signature },
      })
      const bytes = Buffer.from(await request.arrayBuffer())
      const status = receive(bytes, request.headers.get('service-hmac-sha256'))
      const response = new Response('{"ok":true}', { status, headers: { 'content-type': 'application/json' } })
      if (response.status !== 200) throw new Error('baseline rejected')
    }
  },
  'core handle() (Request -> Response)': (events) => handleAll(coreReceiver(), events),
  'core handle() + otel, no SDK (Request -> Response)': (events) => handleAll(coreReceiver(openTelemetry()), events),
  // Last, so the garbage its spans leave behind does not land on the other rows' rounds.
  'core receive() + otel, SDK recording (raw bytes)': (events) =>
    receiveAll(coreReceiver(openTelemetry(recording)), events),
}

async function receiveAll(webhooks, events) {
  for (const { body, signature } of events) {
    const result = await webhooks.receive({
      body,
      getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined),
    })
    if (result.status !== 200) throw new Error(`core answered ${result.status}: ${result.body}`)
  }
}

async function handleAll(webhooks, events) {
  for (const { body, signature } of events) {
    const request = new Request('http://localhost/webhooks', {
      method: 'POST',
      body,
      headers: { 'service-hmac-sha256': signature },
    })
    const response = await webhooks.handle(request)
    if (response.status !== 200) throw new Error(`core answered ${response.status}`)
  }
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

const names = Object.keys(variants)
const inputs = {}
for (const name of names) inputs[name] = []
for (let r = 0; r < ROUNDS + 1; r++)
  for (const name of names) inputs[name].push(await makeEvents(`${name.length}_${r}_${name}`, PER_ROUND))

const rates = Object.fromEntries(names.map((n) => [n, []]))
for (let r = 0; r < ROUNDS + 1; r++) {
  for (const name of names) {
    globalThis.gc?.()
    const start = process.hrtime.bigint()
    await variants[name](inputs[name][r])
    const seconds = Number(process.hrtime.bigint() - start) / 1e9
    if (r > 0) rates[name].push(PER_ROUND / seconds) // round 0 warms up the JIT
  }
}

const rows = names.map((name) => {
  const eps = median(rates[name])
  const web = name.includes('Request')
  const baseline = median(rates[web ? 'baseline (Request -> Response)' : 'baseline (raw bytes)'])
  const core = median(rates[web ? 'core handle() (Request -> Response)' : 'core receive() (raw bytes)'])
  return {
    variant: name,
    'events/s (median)': Math.round(eps),
    'µs/event': (1e6 / eps).toFixed(2),
    'cost vs baseline': `${(baseline / eps).toFixed(2)}x`,
    'vs core': name.includes('otel') ? `${(core / eps).toFixed(2)}x` : '',
  }
})
console.log(
  `Node ${process.version}, ${PER_ROUND} fresh transaction_settled events per round, ${ROUNDS} rounds (+1 warm-up)\n`,
)
console.table(rows)
console.log(`(${handled} events reached a handler)`)
await recording.tracerProvider.shutdown()
await recording.meterProvider.shutdown()
