// Soak: slow-body clients plus normal traffic against the Express example (examples/express/server.js), and the
// same against a hand-written Express route (raw-body, createHmac, JSON.parse) with no deadline on the body read.
// 500 clients send the head of a signed POST, then one body byte a second and never finish; whenever the server
// closes one, it reconnects at once (an attacker keeping 500 sockets busy). Meanwhile a steady stream of normal,
// correctly signed deliveries measures the answer time. Each server runs in its own child process; its RSS and
// open file descriptors are sampled every second, before the slow clients start and while they run.
// Run: pnpm bench soak (builds first; this file imports the built packages). SOAK_SECONDS changes the 30 s.
import { fork } from 'node:child_process'
import { createHmac } from 'node:crypto'
import { once } from 'node:events'
import { readdirSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { sampleEvent } from '@payhooks/testing'

const SLOW_CLIENTS = 500
const SOAK_SECONDS = Number(process.env.SOAK_SECONDS) || 30
const BEFORE_SECONDS = 8
/** Normal deliveries per second, spread evenly: well under what either route answers, so p99 shows waiting, not saturation. */
const NORMAL_RATE = 200
const SECRET = 'whsec_soak'
const SIGNATURE_HEADER = 'service-hmac-sha256'
const VARIANTS = ['example', 'baseline']

// ---- child: one server -------------------------------------------------------------------------

async function serve(variant) {
  let app
  if (variant === 'example') {
    const { createApp } = await import('../examples/express/server.js')
    app = createApp({ secret: SECRET, log: () => {} })
  } else {
    const { default: express } = await import('express')
    const { default: getRawBody } = await import('raw-body')
    app = express()
    app.post('/webhooks', async (req, res) => {
      const raw = await getRawBody(req, { length: req.headers['content-length'], limit: 1_048_576 })
      const expected = createHmac('sha256', SECRET).update(raw).digest('hex').toUpperCase()
      if (expected !== req.headers[SIGNATURE_HEADER]) return res.status(401).json({ error: 'invalid_signature' })
      res.json({ ok: true, event_id: JSON.parse(raw.toString('utf8')).event_id })
    })
  }
  const server = app.listen(0, '127.0.0.1')
  await once(server, 'listening')
  process.on('message', (message) => {
    if (message !== 'stats') return
    let fds = -1
    try {
      fds = readdirSync('/proc/self/fd').length
    } catch {} // not Linux: reported as n/a
    process.send({ rss: process.memoryUsage().rss, fds })
  })
  process.on('disconnect', () => process.exit(0))
  process.send({ port: server.address().port })
}

// ---- parent: load and report -------------------------------------------------------------------

let counter = 0
function signedBody() {
  const body = JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_soak_${process.pid}_${++counter}` }))
  return { body, signature: createHmac('sha256', SECRET).update(body).digest('hex').toUpperCase() }
}

const percentile = (values, p) => {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

/** Normal traffic at NORMAL_RATE until `stop()`: latencies (ms) and failures, per phase label. */
function normalTraffic(port) {
  const agent = new Agent({ keepAlive: true, maxSockets: 32 })
  const phases = new Map()
  let phase = 'before'
  const record = (key, value) => {
    const entry = phases.get(phase) ?? { latencies: [], failures: 0, statuses: new Map() }
    phases.set(phase, entry)
    if (key === 'latency') entry.latencies.push(value)
    else {
      entry.failures++
      entry.statuses.set(value, (entry.statuses.get(value) ?? 0) + 1)
    }
  }
  const send = () => {
    const { body, signature } = signedBody()
    const started = performance.now()
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/webhooks',
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
      },
      (res) => {
        res.resume()
        res.on('end', () => {
          if (res.statusCode === 200) record('latency', performance.now() - started)
          else record('failure', res.statusCode)
        })
      },
    )
    req.on('error', (error) => record('failure', error.code))
    req.end(body)
  }
  const timer = setInterval(() => {
    for (let i = 0; i < NORMAL_RATE / 50; i++) send()
  }, 20)
  return {
    setPhase(name) {
      phase = name
    },
    phases,
    stop() {
      clearInterval(timer)
      agent.destroy()
    },
  }
}

/** SLOW_CLIENTS sockets that never finish their body, each reconnecting when the server closes it. */
function slowClients(port) {
  const { body, signature } = signedBody()
  const head =
    `POST /webhooks HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n` +
    `${SIGNATURE_HEADER}: ${signature}\r\ncontent-length: ${body.length}\r\n\r\n`
  const holds = []
  const answers = new Map()
  /** Open sockets and when each connected. */
  const sockets = new Map()
  let opened = 0
  let stopped = false
  const open = () => {
    if (stopped) return
    opened++
    const socket = connect(port, '127.0.0.1')
    const started = performance.now()
    sockets.set(socket, started)
    let sent = 0
    let received = ''
    let timer
    socket.setEncoding('latin1')
    socket.on('connect', () => {
      socket.write(head)
      timer = setInterval(() => socket.write(body[sent++ % body.length]), 1000)
    })
    socket.on('data', (text) => {
      received += text
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      clearInterval(timer)
      sockets.delete(socket)
      if (stopped) return
      holds.push(performance.now() - started)
      const status = received.slice(9, 12) || 'none'
      answers.set(status, (answers.get(status) ?? 0) + 1)
      open()
    })
  }
  for (let i = 0; i < SLOW_CLIENTS; i++) open()
  return {
    holds,
    answers,
    get opened() {
      return opened
    },
    /** Age in ms of the oldest socket still open. */
    get oldest() {
      let oldest = 0
      for (const started of sockets.values()) oldest = Math.max(oldest, performance.now() - started)
      return oldest
    },
    stop() {
      stopped = true
      for (const socket of sockets.keys()) socket.destroy()
    },
  }
}

async function run(variant) {
  const child = fork(import.meta.filename, ['serve', variant], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const [{ port }] = await once(child, 'message')
  const stats = { before: [], during: [] }
  const sample = async (phase) => {
    child.send('stats')
    const [message] = await once(child, 'message')
    stats[phase].push(message)
  }
  const traffic = normalTraffic(port)
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
  for (let s = 0; s < BEFORE_SECONDS; s++) {
    await sleep(1000)
    await sample('before')
  }
  traffic.setPhase('during')
  // The slow clients get a process of their own, so their reconnects do not slow the normal traffic's client.
  const attacker = fork(import.meta.filename, ['slow', String(port)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  await once(attacker, 'message')
  for (let s = 0; s < SOAK_SECONDS; s++) {
    await sleep(1000)
    await sample('during')
  }
  traffic.stop()
  attacker.send('stop')
  const [slow] = await once(attacker, 'message')
  attacker.kill()
  child.kill()
  const phase = (name) => traffic.phases.get(name) ?? { latencies: [], failures: 0, statuses: new Map() }
  const summary = (name) => {
    const { latencies, failures, statuses } = phase(name)
    const rss = stats[name].map((s) => s.rss / 1048576)
    const fds = stats[name].map((s) => s.fds)
    return {
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      ok: latencies.length,
      failures,
      statuses: [...statuses].map(([status, n]) => `${n}x${status}`).join(' '),
      rss: Math.max(...rss),
      fds: fds[0] < 0 ? 'n/a' : `${Math.min(...fds)}-${Math.max(...fds)}`,
    }
  }
  return {
    variant,
    before: summary('before'),
    during: summary('during'),
    slow,
  }
}

async function main() {
  console.log(
    `${SLOW_CLIENTS} slow-body clients (1 byte/s, reconnecting when closed) for ${SOAK_SECONDS} s, plus ${NORMAL_RATE} ` +
      `signed deliveries/s throughout; ${BEFORE_SECONDS} s of normal traffic alone first. Node ${process.version}.\n` +
      'example: examples/express (payhooks, deadlineMs 5000); baseline: a hand-written Express route, no deadline.\n',
  )
  const results = []
  for (const variant of VARIANTS) results.push(await run(variant))
  const f = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-')
  const header = ['route', 'phase', 'p50 ms', 'p99 ms', 'ok', 'failed', 'server RSS max MiB', 'server fds min-max']
  console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
  for (const r of results) {
    for (const name of ['before', 'during']) {
      const s = r[name]
      console.log(
        `| ${r.variant} | ${name} | ${f(s.p50)} | ${f(s.p99)} | ${s.ok} | ${s.failures}${s.statuses ? ` (${s.statuses})` : ''} | ${f(s.rss)} | ${s.fds} |`,
      )
    }
  }
  const slowHeader = [
    'route',
    'slow connections opened',
    'closed by the server',
    'answers they got',
    'held p50 s',
    'held max s',
    'oldest still open at the end, s',
  ]
  console.log(`\n| ${slowHeader.join(' | ')} |\n|${slowHeader.map(() => '---').join('|')}|`)
  for (const { variant, slow } of results) {
    console.log(
      `| ${variant} | ${slow.opened} | ${slow.closed} | ${slow.answers} | ${f(slow.holdP50)} | ${f(slow.holdMax)} | ${f(slow.oldest)} |`,
    )
  }
  const [example, baseline] = results
  console.log(
    `\np99 during / before: example ${f(example.during.p99 / example.before.p99, 2)}x, baseline ${f(baseline.during.p99 / baseline.before.p99, 2)}x. ` +
      'Held: how long the server kept a slow connection before closing it (only closed ones). ' +
      'A busy machine moves every figure: read them as indicative.',
  )
  // The promise: every slow connection answered and closed within the service's 10 s, whatever the load.
  if (!(example.slow.holdMax < 10 && example.slow.oldest < 10)) {
    console.log('FAILED: the example held a slow connection 10 s or more.')
    process.exitCode = 1
  }
}

/** The slow clients' process: starts them, and on 'stop' reports what they saw. */
function attack(port) {
  const slow = slowClients(port)
  process.on('message', (message) => {
    if (message !== 'stop') return
    const oldest = slow.oldest
    slow.stop()
    process.send({
      opened: slow.opened,
      answers: [...slow.answers].map(([status, n]) => `${n}x${status}`).join(' ') || 'none',
      holdP50: percentile(slow.holds, 50) / 1000,
      holdMax: slow.holds.length ? Math.max(...slow.holds) / 1000 : Number.NaN,
      closed: slow.holds.length,
      oldest: oldest / 1000,
    })
  })
  process.send('started')
}

if (process.argv[2] === 'serve') await serve(process.argv[3])
else if (process.argv[2] === 'slow') attack(Number(process.argv[3]))
else await main()
