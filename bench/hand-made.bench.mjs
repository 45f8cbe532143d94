// The hand-made parts of core's hot path against the library each stands in for (issue 31: keep one only where it
// saves at least 3% of the hot path), judged in the same run on the CPU time of a whole request in-process: a Node
// stream with the ~600-byte body read to its end, then `receive()` (verify, parse, schema check, dedupe, handler).
// The body reader (node-body.ts, behind readNodeBody) against raw-body 3; the HMAC from two one-shot hashes
// (crypto/hmac-pads.ts) against `createHmac`; the checks compiled from valibot schemas (schema-check/) against
// valibot's `safeParse` and `is`. Each variant is the built core with that one part swapped (a copy of dist/ under
// node_modules, edited). CPU time (process.cpuUsage) rather than wall time, so that other processes on a shared
// machine count less; rounds alternate, medians of per-round ratios against core as built.
//   pnpm bench hand-made
import { cpSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'

const SECRET = 'whsec_bench'
const PER_ROUND = 20_000
const ROUNDS = 9
const dist = join(import.meta.dirname, '../packages/core/dist')
// Inside packages/core/node_modules, so that the copies resolve valibot as core does.
const copies = join(import.meta.dirname, '../packages/core/node_modules/.bench-hand-made')

/** [file under dist, text, replacement] */
const swaps = {
  'core as built': [],
  'body: raw-body': [],
  'HMAC: createHmac(KeyObject)': [
    ['crypto/node-crypto-provider.js', 'options.pads === false ? undefined :', 'true ? undefined :'],
  ],
  'schema: v.safeParse': [['verify/verify-and-parse.js', 'if (compileCheck(schema)?.(parsed))', 'if (false)']],
  'schema: v.is': [['verify/verify-and-parse.js', 'if (compileCheck(schema)?.(parsed))', 'if (v.is(schema, parsed))']],
}

rmSync(copies, { recursive: true, force: true })
const cores = {}
for (const [name, edits] of Object.entries(swaps)) {
  const dir = join(copies, String(Object.keys(cores).length))
  cpSync(dist, dir, { recursive: true, filter: (path) => !path.includes('/cjs') })
  for (const [file, text, replacement] of edits) {
    const source = readFileSync(join(dir, file), 'utf8')
    if (!source.includes(text)) throw new Error(`${file} no longer has ${text}`)
    writeFileSync(join(dir, file), source.replace(text, replacement))
  }
  cores[name] = { ...(await import(join(dir, 'index.js'))), ...(await import(join(dir, 'node.js'))) }
}
const { default: getRawBody } = await import('raw-body')
const readers = {
  'core as built': (core, stream, limit) => core.readNodeBody(stream, limit).body,
  'body: raw-body': (_core, stream, limit) => getRawBody(stream, { length: stream.contentLength, limit }),
}

let handled = 0
async function makeEvents(tag) {
  const events = []
  for (let i = 0; i < PER_ROUND; i++) {
    const body = Buffer.from(JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_${tag}_${i}` })))
    events.push({ body, signature: await sign(SECRET, body) })
  }
  return events
}

function requestStream(body) {
  const stream = new Readable({ read() {} })
  stream.contentLength = String(body.length)
  stream.push(body)
  stream.push(null)
  return stream
}

async function receiveAll(name, events) {
  const core = cores[name]
  const read = readers[name] ?? readers['core as built']
  const webhooks = core.createWebhooks({ secret: SECRET, store: core.memoryStore() })
  webhooks.on('transaction_settled', (event) => {
    handled += event.data.settlement_amount > 0 ? 1 : 0
  })
  for (const { body, signature } of events) {
    const result = await webhooks.receive({
      body: read(core, requestStream(body), webhooks.maxBodyBytes),
      getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined),
    })
    if (result.status !== 200) throw new Error(`core answered ${result.status}: ${result.body}`)
  }
  await webhooks.close()
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1]
const names = Object.keys(cores)
const times = Object.fromEntries(names.map((name) => [name, []]))
for (let round = 0; round <= ROUNDS; round++) {
  const order = round % 2 ? [...names].reverse() : names
  for (const name of order) {
    const events = await makeEvents(`${round}_${name.length}`)
    globalThis.gc?.()
    const start = process.cpuUsage()
    await receiveAll(name, events)
    const { user, system } = process.cpuUsage(start)
    if (round > 0) times[name].push((user + system) / PER_ROUND)
  }
}
rmSync(copies, { recursive: true, force: true })
const base = times[names[0]]
console.log(
  `Node ${process.version}, ${PER_ROUND} receive() per round, ${ROUNDS} rounds (+1 warm-up); handled ${handled}\n`,
)
console.table(
  names.map((name) => ({
    variant: name,
    'CPU µs/request (median)': median(times[name]).toFixed(2),
    'vs core as built (median of per-round ratios)': `${median(times[name].map((t, i) => t / base[i])).toFixed(3)}x`,
  })),
)
