// A partial hang as an operator sees it (issue 38): a receiver on node:http under a steady signed load in which one
// event type's handler hangs on HANG_EVERY-th event (0.5% of traffic), ignoring its signal. The service's retries of
// the hung events are sent every RETRY_MS. A scraper reads the receiver's OpenTelemetry metrics from a /metrics
// route every SCRAPE_MS and evaluates the production guide's alert rows ("any payhooks.handler.timeouts increase in
// 5 min", "payhooks.handlers.hung > 0"); a prober reads /ready and the operating guide's /live every 500 ms.
// Reported: when each rule first fires (from the first hang and from the first maxRunMs), how many times each event
// ran (must be 1, retries of hung events included), and what /ready and /live answer once hung runs hold every slot.
// Loopback only; bounded in time.
//   pnpm build && node bench/hung-handlers.bench.mjs   (BENCH_SECONDS, default 45; BENCH_RATE events/s, default 200)
import { createServer } from 'node:http'
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics'
import { createWebhooks, memoryStore, sign } from '@payhooks/core'
import { nodeHealth, nodeWebhooks } from '@payhooks/core/node'
import { openTelemetry } from '@payhooks/otel'
import { sampleEvent } from '@payhooks/testing'

const SECRET = 'whsec_bench_hung'
const SECONDS = Number(process.env.BENCH_SECONDS ?? 45)
const RATE = Number(process.env.BENCH_RATE ?? 200)
const HANG_EVERY = 200 // 0.5%
const SLOTS = 8 // the production guide's example
const MAX_RUN_MS = 5000
const SCRAPE_MS = 15_000 // a Prometheus-style scrape and rule evaluation interval
const RETRY_MS = 1000
const HANDLER_MS = 2

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
const meterProvider = new MeterProvider({ readers: [reader] })
const webhooks = createWebhooks({
  secret: SECRET,
  store: memoryStore(),
  maxConcurrentEvents: SLOTS,
  deadlineMs: 2000,
  maxRunMs: MAX_RUN_MS,
  telemetry: openTelemetry({ meterProvider }),
  logger: { error() {}, warn() {} },
})
webhooks.onError(() => {})
const runs = new Map()
const release = []
webhooks.onAny(async (event) => {
  runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
  if (event.event_type === 'transaction_returned') await new Promise((resolve) => release.push(resolve))
  else await sleep(HANDLER_MS)
})

/** The metrics route a scraper reads: the two hung-handler metrics, as values. */
async function scrape() {
  await reader.forceFlush()
  const batches = exporter.getMetrics()
  const metrics = batches.at(-1)?.scopeMetrics.flatMap((scope) => scope.metrics) ?? []
  exporter.reset()
  const sum = (name) =>
    metrics
      .filter((metric) => metric.descriptor.name === name)
      .flatMap((metric) => metric.dataPoints)
      .reduce((total, point) => total + Number(point.value), 0)
  return { hung: sum('payhooks.handlers.hung'), timeouts: sum('payhooks.handler.timeouts') }
}

const receive = nodeWebhooks(webhooks)
const ready = nodeHealth(webhooks)
const server = createServer(async (request, response) => {
  if (request.url === '/webhooks') return receive(request, response)
  if (request.url === '/ready') return ready(request, response)
  if (request.url === '/live') {
    // The operating guide's liveness probe: 503 once hung handlers hold every slot.
    const report = await webhooks.health()
    const hung = report.checks.find((check) => check.name === 'hung_handlers')
    response.writeHead(hung?.severity === 'error' ? 503 : 200).end()
    return
  }
  if (request.url === '/metrics') {
    response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(await scrape()))
    return
  }
  response.writeHead(404).end()
})
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const base = `http://127.0.0.1:${server.address().port}`

async function deliver(id, type) {
  const body = Buffer.from(JSON.stringify(sampleEvent(type, { eventId: id })))
  const response = await fetch(`${base}/webhooks`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', 'service-hmac-sha256': await sign(SECRET, body) },
  })
  await response.arrayBuffer()
  return response.status
}

const started = performance.now()
const at = () => (performance.now() - started) / 1000
const statuses = {}
const count = (status) => {
  statuses[status] = (statuses[status] ?? 0) + 1
}
let firstHangAt
let stop = false
const hungIds = []
const fired = {}
let slotsAllHungAt
let readyAtAllHung
let liveAtAllHung

const load = (async () => {
  const pending = []
  for (let i = 0; !stop; i++) {
    const hang = i % HANG_EVERY === HANG_EVERY - 1
    const id = `evt_hung_bench_${i}`
    if (hang) {
      hungIds.push(id)
      firstHangAt ??= at()
    }
    pending.push(deliver(id, hang ? 'transaction_returned' : 'transaction_settled').then(count, () => count('error')))
    await sleep(1000 / RATE)
  }
  await Promise.all(pending)
})()

const retries = (async () => {
  while (!stop) {
    await sleep(RETRY_MS)
    await Promise.all(
      hungIds.map((id) =>
        deliver(id, 'transaction_returned').then(
          (s) => count(`retry ${s}`),
          () => count('error'),
        ),
      ),
    )
  }
})()

const scraper = (async () => {
  while (!stop) {
    await sleep(SCRAPE_MS)
    const { hung, timeouts } = await (await fetch(`${base}/metrics`)).json()
    if (timeouts > 0) fired.timeouts ??= at()
    if (hung > 0) fired.hung ??= at()
  }
})()

const prober = (async () => {
  while (!stop) {
    await sleep(500)
    const hung = webhooks.stats().hung?.count ?? 0
    if (hung >= SLOTS && slotsAllHungAt === undefined) {
      slotsAllHungAt = at()
      await sleep(1500) // a probe period after
      readyAtAllHung = (await fetch(`${base}/ready`)).status
      liveAtAllHung = (await fetch(`${base}/live`)).status
    }
  }
})()

await sleep(SECONDS * 1000)
stop = true
await Promise.all([load, retries, scraper, prober])
for (const resolve of release) resolve()
await sleep(100)
await webhooks.close()
server.close()

const counts = [...runs.values()]
const ranTwice = counts.filter((n) => n > 1).length
const hungRuns = hungIds.map((id) => runs.get(id) ?? 0)
const firstTimeoutAt = firstHangAt + MAX_RUN_MS / 1000
const fmt = (s) => (s === undefined ? 'never' : `${s.toFixed(1)} s`)
console.log(
  `${SECONDS} s at ${RATE} events/s, 1 in ${HANG_EVERY} hanging (transaction_returned), ${SLOTS} slots, maxRunMs ${MAX_RUN_MS}, scrape every ${SCRAPE_MS / 1000} s`,
)
console.log(`| rule | fired at | after the first hang | after the first maxRunMs |`)
console.log(`|---|---|---|---|`)
for (const [rule, name] of [
  ['any `payhooks.handler.timeouts` increase', 'timeouts'],
  ['`payhooks.handlers.hung` > 0', 'hung'],
]) {
  const t = fired[name]
  console.log(
    `| ${rule} | ${fmt(t)} | ${t === undefined ? '-' : fmt(t - firstHangAt)} | ${t === undefined ? '-' : fmt(t - firstTimeoutAt)} |`,
  )
}
console.log(
  `events run: ${runs.size}, run more than once: ${ranTwice}; hung events ${hungIds.length}, runs of each: ${[...new Set(hungRuns)].join(', ')}`,
)
console.log(
  `every slot hung at ${fmt(slotsAllHungAt)}: /ready ${readyAtAllHung ?? '-'}, /live ${liveAtAllHung ?? '-'}; answers: ${JSON.stringify(statuses)}`,
)
if (ranTwice > 0) process.exitCode = 1
