// Shared by the HTTP benchmarks: servers in child processes, autocannon load with a fresh signed event
// per request, and rounds that rotate the routes' order so no route always runs first.
import { fork } from 'node:child_process'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { once } from 'node:events'
import { sampleEvent } from '@payhooks/testing'
import autocannon from 'autocannon'

export const SECRET = 'whsec_bench'
export const LIMIT = 1_048_576
export const SIGNATURE_HEADER = 'service-hmac-sha256'
/** More than any route here answers per second, so no body is sent twice. */
const BODIES_PER_SECOND = 60_000

/**
 * The check a hand-written route does: HMAC of the raw bytes (`createHmac`), constant-time compare, JSON.parse, and
 * a Set of handled event ids. Returns the answer's object (processed or duplicate), or undefined for a bad signature.
 */
export function handWrittenCheck() {
  const seen = new Set()
  return (raw, signature) => {
    if (typeof signature !== 'string' || signature.length !== 64) return undefined
    const expected = createHmac('sha256', SECRET).update(raw).digest()
    if (!timingSafeEqual(expected, Buffer.from(signature, 'hex'))) return undefined
    const event = JSON.parse(raw.toString('utf8'))
    const status = seen.has(event.event_id) ? 'duplicate' : 'processed'
    seen.add(event.event_id)
    return { ok: true, event_id: event.event_id, status }
  }
}

export const sign = (body) => createHmac('sha256', SECRET).update(body).digest('hex').toUpperCase()

export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * Forks `file` with `args`; the child answers `{ port }` over IPC once it listens. With `BENCH_CPU_PROF=<dir>`, the
 * child writes its V8 CPU profile to `<dir>/<args>.cpuprofile` when {@link stopServers} stops it.
 */
export async function startServer(file, args) {
  const dir = process.env.BENCH_CPU_PROF
  const name = `${args.join('-').replace(/[^\w.-]+/g, '_')}.cpuprofile`
  const execArgv = dir
    ? [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}`]
    : undefined
  const child = fork(file, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const [message] = await once(child, 'message')
  return { child, url: `http://127.0.0.1:${message.port}` }
}

/** Stops the servers of `running` (`{ [variant]: { child } }`): each exits on its own, writing its profile if asked. */
export function stopServers(running) {
  for (const { child } of Object.values(running)) if (child.connected) child.disconnect()
}

/**
 * In a child started by {@link startServer}: report the port, exit with the parent, and answer `'cpu'` with this
 * process's CPU time so far (µs), from which the parent works out CPU per request.
 */
export function serveChild(port) {
  process.on('disconnect', () => process.exit(0))
  process.on('message', (message) => {
    if (message !== 'cpu') return
    const { user, system } = process.cpuUsage()
    process.send({ cpu: user + system })
  })
  process.send({ port })
}

/** The server child's CPU time so far, in µs. */
async function serverCpu(child) {
  child.send('cpu')
  for (;;) {
    const [message] = await once(child, 'message')
    if (typeof message?.cpu === 'number') return message.cpu
  }
}

/** The kit's own signing: what the payment service sends. */
export const signKit = (body) => ({ 'content-type': 'application/json', [SIGNATURE_HEADER]: sign(body) })

let eventCounter = 0
/**
 * Fresh bodies with their headers from `signRequest(body, eventId)` (by default {@link signKit}), made before a
 * round so the client spends no time signing while it measures, and so timestamps in the headers are fresh.
 */
function makeBodies(count, signRequest = signKit) {
  const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bench_@' }))
  return Array.from({ length: count }, () => {
    const eventId = `evt_bench_${process.pid}_${++eventCounter}`
    const body = template.replace('evt_bench_@', eventId)
    return { body, headers: signRequest(body, eventId) }
  })
}

/**
 * Loads `url`/webhooks for `seconds`; every request a new event, signed by `signRequest` (default: the kit's
 * signature). With the server's `child`, also the server's CPU time per answered request (µs): steadier than
 * req/s when the load generator shares the cores.
 */
export async function load(url, seconds, connections, child, signRequest) {
  const bodies = makeBodies(BODIES_PER_SECOND * seconds, signRequest)
  let next = 0
  let reused = 0
  const cpuBefore = child ? await serverCpu(child) : 0
  const result = await autocannon({
    url: `${url}/webhooks`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest(request) {
          if (next === bodies.length) {
            next = 0
            reused++
          }
          const { body, headers } = bodies[next++]
          return { ...request, body, headers }
        },
      },
    ],
  })
  const cpuUs = child ? ((await serverCpu(child)) - cpuBefore) / result.requests.total : Number.NaN
  const failures = result.non2xx + result.errors + result.timeouts
  const statuses = Object.entries(result.statusCodeStats)
    .filter(([code]) => !code.startsWith('2'))
    .map(([code, { count }]) => `${count}x ${code}`)
  return { rps: result.requests.average, p99: result.latency.p99, cpuUs, failures, statuses, reused }
}

/**
 * Runs `rounds` rounds over the running servers (`{ [variant]: { url, child, signRequest? } }`; `signRequest` as
 * in {@link load}), rotating their order, after
 * a warm-up. Returns per-variant samples, a ratio helper (median of per-round req/s ratios: sturdier than
 * a ratio of medians when other processes load the machine in bursts) and the count of bad rounds.
 */
export async function compareRounds(running, { label, rounds, roundSeconds, warmupSeconds, connections }) {
  const variants = Object.keys(running)
  const samples = Object.fromEntries(variants.map((variant) => [variant, []]))
  let problems = 0
  for (const variant of variants) {
    await load(running[variant].url, warmupSeconds, connections, undefined, running[variant].signRequest)
  }
  for (let round = 0; round < rounds; round++) {
    const order = variants.map((_, i) => variants[(i + round) % variants.length])
    if (round % 2) order.reverse()
    for (const variant of order) {
      const { url, child, signRequest } = running[variant]
      const sample = await load(url, roundSeconds, connections, child, signRequest)
      if (sample.failures || sample.reused) {
        problems++
        const statuses = sample.statuses.length ? ` (${sample.statuses.join(', ')})` : ''
        console.log(`${label} ${variant}: ${sample.failures} non-2XX/errors${statuses}, ${sample.reused} reused bodies`)
      }
      samples[variant].push(sample)
    }
  }
  const rps = (variant) => samples[variant].map((s) => s.rps)
  const ratio = (a, b) => `${median(rps(a).map((value, i) => value / rps(b)[i])).toFixed(2)}x`
  const medianRps = (variant) => median(rps(variant)).toFixed(0)
  const medianP99 = (variant) => median(samples[variant].map((s) => s.p99)).toFixed(1)
  /** Median server CPU µs per request, and its median per-round ratio to `b`'s (how much more each request costs). */
  const medianCpu = (variant) => median(samples[variant].map((s) => s.cpuUs)).toFixed(1)
  const cpuRatio = (a, b) => `${median(samples[a].map((s, i) => samples[b][i].cpuUs / s.cpuUs)).toFixed(2)}x`
  console.log(
    `${label} req/s per round: ${variants
      .map(
        (v) =>
          `${v} ${rps(v)
            .map((x) => x.toFixed(0))
            .join(' ')}`,
      )
      .join('; ')}`,
  )
  return { samples, ratio, medianRps, medianP99, medianCpu, cpuRatio, problems }
}
