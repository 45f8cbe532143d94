// Cost of the signature doctor, which runs only after a failed check.
// 1. One diagnosis of a typical event signed with a secret the receiver does not hold (every candidate is tried),
//    against the one check it follows, on each HMAC provider, in alternating rounds; medians reported.
// 2. One diagnosis of each hostile shape (bodies up to the doctor's 64 KiB, any 64-hex signature) on node:crypto,
//    against one HMAC of the same body; target (issue 30): the worst shape ≤ 5 ms.
// 3. A flood of failed checks with those shapes over 32 connections (autocannon) on a node:http receiver in its
//    own process, against a hand-written receiver (createHmac, timingSafeEqual, 401) under the same flood: the
//    longest event-loop delay in the server (perf_hooks monitorEventLoopDelay) and how long a valid delivery sent
//    every 100 ms meanwhile waits; target (issue 30): the event loop never held over 50 ms.
//   pnpm bench signature-doctor     (BENCH_FLOOD=0 leaves the flood out)
import * as crypto from 'node:crypto'
import { once } from 'node:events'
import { createServer, request } from 'node:http'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { diagnoseSignature, sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'
import autocannon from 'autocannon'
import { median, SECRET, SIGNATURE_HEADER, serveChild, startServer, stopServers } from './http-load.mjs'

// The providers are not part of core's public entry; the built modules are.
const { nodeCryptoProvider } = await import('../packages/core/dist/crypto/node-crypto-provider.js')
const { subtleCryptoProvider } = await import('../packages/core/dist/crypto/subtle-crypto-provider.js')

const LIMIT = 65_536
const nested = (depth, open, close, inner = '') => open.repeat(depth) + inner + close.repeat(depth)
/** `unit` repeated inside `open` … `close` to the largest body within `bytes`. */
const filled = (bytes, unit, open = '', close = '') =>
  Buffer.from(
    open + unit.repeat(Math.floor((bytes - Buffer.byteLength(open + close)) / Buffer.byteLength(unit))) + close,
  )
function manyKeys(bytes, value) {
  const members = []
  let length = 2
  for (let i = 99_999; ; i--) {
    const member = `"k${i}":${value}`
    length += Buffer.byteLength(member) + 1
    if (length > bytes) return Buffer.from(`{${members.join(',')}}`)
    members.push(member)
  }
}
/** The shapes of test/fixtures/hostile-bodies.ts, and more found while looking for the worst. */
const SHAPES = {
  'deep arrays (16 x 2,000)': Buffer.from(
    `[${Array(16)
      .fill(nested(2_000, '[', ']'))
      .join(',')}]`,
  ),
  'deep objects': Buffer.from(nested(Math.floor((LIMIT - 1) / 6), '{"a":', '}', '0')),
  'one 30,000-deep array': Buffer.from(nested(30_000, '[', ']')),
  'wide array': filled(LIMIT, '0,', '[', '0]'),
  'many keys': manyKeys(LIMIT, '0'),
  'long escaped strings': filled(LIMIT, '\\"\\\\\\u00e9', '["', '"]'),
  'non-ASCII text': filled(LIMIT, 'é東😀', '["', '"]'),
  'latin-1 text (both re-encodings built)': filled(LIMIT, 'caf\xe9 ', '["', '"]'),
  'UTF-8 latin letters (both re-encodings built)': filled(LIMIT, 'café ', '["', '"]'),
  'CRLF and LF lines': filled(LIMIT, '[0]\r\n[1]\n'),
  'LF lines, trailing newlines': filled(LIMIT - 64, '0\n', '', '\n'.repeat(63)),
  'JSON limits: 30 deep, unsorted, non-ASCII': Buffer.from(
    nested(30, '{"z":', '}', `[${Array(20).fill('{"é":"東","b":[],"a":{}}').join(',')}]`),
  ),
  'JSON limits: 4 KiB, 124 unsorted non-ASCII keys': manyKeys(4_096, `"${'é東'.repeat(4)}"`),
  'JSON limits: 4 KiB, 124 unsorted keys, long non-ASCII': manyKeys(4_096, `"${'é'.repeat(12)}"`),
  'JSON limits: 250 numbers written long': Buffer.from(`[${Array(250).fill('1e20').join(',')}]`),
  'JSON limits: 200 values, 4 deep, CRLF': Buffer.from(
    nested(3, '{"z":', '}', `[${Array(50).fill('{"b":"é","a":[]}').join(',\r\n')}]`),
  ),
}
const ANY_SIGNATURE = 'A1'.repeat(32)

async function typicalEvent() {
  const PER_ROUND = 2_000
  const ROUNDS = 5
  const body = Buffer.from(JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_bench_doctor' })))
  const signature = await sign('whsec_not_held', body)
  const secrets = ['whsec_bench']
  const providers = { 'node:crypto': nodeCryptoProvider(crypto, Buffer), 'Web Crypto': subtleCryptoProvider() }
  const variants = {}
  for (const [name, provider] of Object.entries(providers)) {
    variants[`${name}: the failed check`] = async () => {
      for (let i = 0; i < PER_ROUND; i++) await provider.match(secrets, body, signature)
    }
    variants[`${name}: diagnosis`] = async () => {
      for (let i = 0; i < PER_ROUND; i++) {
        const hint = await diagnoseSignature({ secrets, body, signature }, provider)
        if (hint.code !== 'wrong_secret_or_bytes') throw new Error(hint.code)
      }
    }
  }
  const times = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
  for (let r = 0; r < ROUNDS + 1; r++) {
    for (const [name, run] of Object.entries(variants)) {
      const start = process.hrtime.bigint()
      await run()
      if (r > 0) times[name].push(Number(process.hrtime.bigint() - start) / 1e3 / PER_ROUND) // round 0 warms up
    }
  }
  console.log(`Node ${process.version}, a ${body.length}-byte transaction_settled body, ${PER_ROUND} calls per round`)
  console.table(
    Object.keys(variants).map((name) => {
      const provider = name.split(':')[0] === 'node' ? 'node:crypto' : 'Web Crypto'
      const check = median(times[`${provider}: the failed check`])
      const us = median(times[name])
      return { variant: name, 'µs/call (median)': us.toFixed(1), 'vs the check': `${(us / check).toFixed(1)}x` }
    }),
  )
}

/** CPU time (user + system, ms) and wall time (ms) of `run()`, per call of `calls`. */
async function timed(calls, run) {
  const cpu = process.cpuUsage()
  const start = performance.now()
  for (let i = 0; i < calls; i++) await run()
  const { user, system } = process.cpuUsage(cpu)
  return { cpu: (user + system) / 1e3 / calls, wall: (performance.now() - start) / calls }
}

async function hostileShapes() {
  const ROUNDS = 21
  const PER_ROUND = 5
  const provider = nodeCryptoProvider(crypto, Buffer)
  const secrets = ['whsec_bench']
  const rows = []
  for (const [shape, body] of Object.entries(SHAPES)) {
    const diagnosis = []
    const check = []
    let code
    for (let r = 0; r < ROUNDS + 2; r++) {
      const diagnose = async () => {
        code = (await diagnoseSignature({ secrets, body, signature: ANY_SIGNATURE }, provider)).code
      }
      const one = await timed(PER_ROUND, diagnose)
      const hmac = await timed(PER_ROUND * 10, () => crypto.createHmac('sha256', secrets[0]).update(body).digest())
      if (r < 2) continue // two rounds warm up
      diagnosis.push(one)
      check.push(hmac)
    }
    const cpu = median(diagnosis.map((d) => d.cpu))
    const wall = median(diagnosis.map((d) => d.wall))
    rows.push({ shape, bytes: body.length, hint: code, cpu, wall, hmac: median(check.map((c) => c.cpu)) })
  }
  console.log(
    `\nOne diagnosis per shape on node:crypto: ${ROUNDS} rounds of ${PER_ROUND} after 2 warm-up, medians; CPU time ` +
      '(process.cpuUsage: steadier than wall time on a shared machine); HMAC: one createHmac of the same body',
  )
  console.table(
    rows.map(({ shape, bytes, hint, cpu, wall, hmac }) => ({
      shape,
      bytes,
      hint,
      'CPU ms': cpu.toFixed(3),
      'wall ms': wall.toFixed(3),
      'vs one HMAC (CPU)': `${(cpu / hmac).toFixed(0)}x`,
    })),
  )
  const worst = rows.reduce((a, b) => (b.cpu > a.cpu ? b : a))
  console.log(
    `worst shape: ${worst.shape}, ${worst.cpu.toFixed(2)} ms CPU, ${worst.wall.toFixed(2)} ms wall (target ≤ 5 ms)`,
  )
}

// The flood: servers in their own processes, autocannon from this one.
const FLOOD_SECONDS = 3
const FLOOD_ROUNDS = 3
const CONNECTIONS = 32

const servers = {
  /** The kit as its README mounts it on node:http. */
  kit: async () => {
    const { createWebhooks } = await import('@payhooks/core')
    const { nodeWebhooks } = await import('@payhooks/core/node')
    const webhooks = createWebhooks({ secret: SECRET, logger: { error() {} } })
    const hints = {}
    webhooks.onError((error) => {
      const code = error.hint?.code ?? error.code
      hints[code] = (hints[code] ?? 0) + 1
    })
    webhooks.on('transaction_settled', () => {})
    return { server: createServer(nodeWebhooks(webhooks)), hints }
  },
  /** Reads the body, createHmac + timingSafeEqual, 401 or 200: what a failed check costs without a doctor. */
  'hand-written': async () => {
    const server = createServer((req, res) => {
      const chunks = []
      req.on('data', (chunk) => chunks.push(chunk))
      req.on('end', () => {
        const expected = crypto.createHmac('sha256', SECRET).update(Buffer.concat(chunks)).digest()
        const got = Buffer.from(String(req.headers[SIGNATURE_HEADER]), 'hex')
        const ok = got.length === 32 && crypto.timingSafeEqual(expected, got)
        res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(ok ? '{"ok":true}' : '{}')
      })
    })
    return { server, hints: {} }
  },
}

async function serve(variant) {
  const { server, hints } = await servers[variant]()
  const delay = monitorEventLoopDelay({ resolution: 1 })
  let cpu = process.cpuUsage()
  process.on('message', (message) => {
    if (message === 'reset') {
      delay.reset()
      delay.enable()
      cpu = process.cpuUsage()
      for (const key of Object.keys(hints)) delete hints[key]
    } else if (message === 'report') {
      delay.disable()
      const { user, system } = process.cpuUsage(cpu)
      process.send({ maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6, cpuMs: (user + system) / 1e3, hints })
    }
  })
  server.listen(0, '127.0.0.1', () => serveChild(server.address().port))
}

async function ask(child, message) {
  child.send(message)
  if (message !== 'report') return
  for (;;) {
    const [answer] = await once(child, 'message')
    if (answer?.maxMs !== undefined) return answer
  }
}

let validCount = 0
/** Posts a fresh signed event; how long until the answer (ms), and its status. */
async function validDelivery(url, n) {
  const body = JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_bench_flood_${process.pid}_${n}` }))
  const signature = crypto.createHmac('sha256', SECRET).update(body).digest('hex').toUpperCase()
  const start = performance.now()
  return new Promise((resolve, reject) => {
    const req = request(`${url}/webhooks`, { method: 'POST', agent: false, headers: { [SIGNATURE_HEADER]: signature } })
    req.on('error', reject)
    req.on('response', (res) => {
      res.resume()
      res.on('end', () => resolve({ ms: performance.now() - start, status: res.statusCode }))
    })
    req.end(body)
  })
}

async function floodRound(url, child) {
  const bodies = Object.values(SHAPES)
  let next = 0
  await ask(child, 'reset')
  const valid = []
  const timer = setInterval(() => valid.push(validDelivery(url, validCount++)), 100)
  const result = await autocannon({
    url: `${url}/webhooks`,
    connections: CONNECTIONS,
    duration: FLOOD_SECONDS,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => ({
          ...req,
          body: bodies[next++ % bodies.length],
          headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: ANY_SIGNATURE },
        }),
      },
    ],
  })
  clearInterval(timer)
  const answered = await Promise.all(valid)
  const report = await ask(child, 'report')
  const refused = result.statusCodeStats['401']?.count ?? 0
  const bad = answered.filter((a) => a.status !== 200).length + result.errors + result.timeouts
  const cpuUs = (report.cpuMs * 1e3) / (refused + answered.length)
  return { ...report, refused: refused / FLOOD_SECONDS, cpuUs, valid: answered.map((a) => a.ms), bad }
}

async function flood() {
  const variants = Object.keys(servers)
  const running = {}
  for (const variant of variants) running[variant] = await startServer(import.meta.filename, ['serve', variant])
  const samples = Object.fromEntries(variants.map((variant) => [variant, []]))
  try {
    for (let round = 0; round < FLOOD_ROUNDS + 1; round++) {
      for (const variant of round % 2 ? [...variants].reverse() : variants) {
        const sample = await floodRound(running[variant].url, running[variant].child)
        if (round > 0) samples[variant].push(sample) // round 0 warms up
      }
    }
  } finally {
    stopServers(running)
  }
  console.log(
    `\nFlood: ${CONNECTIONS} connections posting the shapes above with a wrong signature, ${FLOOD_ROUNDS} rounds of ` +
      `${FLOOD_SECONDS} s per server after a warm-up round; a valid delivery every 100 ms meanwhile`,
  )
  console.table(
    variants.map((variant) => {
      const rounds = samples[variant]
      const valid = rounds.flatMap((s) => s.valid)
      const hints = {}
      for (const s of rounds)
        for (const [code, count] of Object.entries(s.hints)) hints[code] = (hints[code] ?? 0) + count
      return {
        server: variant,
        'refused/s (median)': median(rounds.map((s) => s.refused)).toFixed(0),
        'server CPU µs/request': median(rounds.map((s) => s.cpuUs)).toFixed(0),
        'longest event-loop delay ms (per round)': rounds.map((s) => s.maxMs.toFixed(1)).join(', '),
        'event-loop p99 ms (median)': median(rounds.map((s) => s.p99Ms)).toFixed(1),
        'valid delivery ms (median, max)': `${median(valid).toFixed(1)}, ${Math.max(...valid).toFixed(1)}`,
        'not 200/401, errors': rounds.reduce((sum, s) => sum + s.bad, 0),
        hints: Object.entries(hints)
          .map(([code, count]) => `${code} ${count}`)
          .join(', '),
      }
    }),
  )
}

if (process.argv[2] === 'serve') await serve(process.argv[3])
else {
  if (process.env.BENCH_TYPICAL !== '0') await typicalEvent()
  await hostileShapes()
  if (process.env.BENCH_FLOOD !== '0') await flood()
}
