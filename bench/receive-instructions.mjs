// Instructions per core `receive()` (and per hand-written check), counted by valgrind's callgrind: a count, not a
// time, so it holds on a loaded machine where the timed `core` bench does not. Each variant runs in a child under
// callgrind twice, with N and 2N pre-signed events; the difference over N is the cost of one delivery, free of
// start-up. `CORE_DIST` points at another build of core (a worktree of an earlier commit) to compare two versions.
//   node bench/receive-instructions.mjs            (needs valgrind: apt-get install valgrind)
import { spawnSync } from 'node:child_process'
import { createHmac, timingSafeEqual } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const SECRET = 'whsec_bench'
const N = Number(process.env.N ?? 4000)

if (process.argv[2] === 'child') {
  const [, , , variant, file, dist] = process.argv
  const events = JSON.parse(readFileSync(file, 'utf8')).map(([body, signature]) => [Buffer.from(body), signature])
  if (variant === 'core') {
    const { createWebhooks, memoryStore } = await import(pathToFileURL(join(dist, 'index.js')).href)
    let handled = 0
    const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), logger: false })
    webhooks.on('transaction_settled', (event) => {
      handled += event.data.settlement_amount > 0 ? 1 : 0
    })
    for (const [body, signature] of events) {
      const result = await webhooks.receive({
        body,
        getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined),
      })
      if (result.status !== 200) throw new Error(`core answered ${result.status}`)
    }
    await webhooks.close()
    if (handled !== events.length) throw new Error(`handled ${handled} of ${events.length}`)
  } else {
    const seen = new Set()
    for (const [body, signature] of events) {
      const actual = createHmac('sha256', SECRET).update(body).digest()
      if (!timingSafeEqual(actual, Buffer.from(signature, 'hex'))) throw new Error('refused')
      const event = JSON.parse(body.toString('utf8'))
      if (!seen.has(event.event_id)) seen.add(event.event_id)
      await undefined
    }
  }
  process.exit(0)
}

const dist = resolve(process.env.CORE_DIST ?? join(import.meta.dirname, '../packages/core/dist'))
const { sampleEvent } = await import('@payhooks/testing')
const dir = mkdtempSync(join(tmpdir(), 'payhooks-ir-'))
const eventsFile = (count) => {
  const file = join(dir, `events-${count}.json`)
  const events = []
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify(sampleEvent('transaction_settled', { eventId: `evt_ir_${i}` }))
    events.push([body, createHmac('sha256', SECRET).update(body).digest('hex')])
  }
  writeFileSync(file, JSON.stringify(events))
  return file
}
const files = { 1: eventsFile(N), 2: eventsFile(2 * N) }

function instructions(variant, file) {
  const out = join(dir, 'callgrind.out')
  const run = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${out}`,
      '--smc-check=all-non-file',
      process.execPath,
      '--single-threaded',
      '--predictable',
      import.meta.filename,
      'child',
      variant,
      file,
      dist,
    ],
    { encoding: 'utf8' },
  )
  if (run.status !== 0) throw new Error(`${variant}: ${run.stderr.slice(-2000)}`)
  const summary =
    readFileSync(out, 'utf8').match(/^summary: (\d+)/m) ?? readFileSync(out, 'utf8').match(/^totals: (\d+)/m)
  rmSync(out)
  return Number(summary[1])
}

const rows = {}
for (const variant of ['hand-written', 'core']) {
  const perEvent = (instructions(variant, files[2]) - instructions(variant, files[1])) / N
  rows[variant] = perEvent
}
rmSync(dir, { recursive: true, force: true })
console.log(`core dist: ${dist}; N = ${N} (runs of N and 2N events)`)
console.table(
  Object.fromEntries(
    Object.entries(rows).map(([k, v]) => [
      k,
      { 'instructions / delivery': Math.round(v), 'vs hand-written': (v / rows['hand-written']).toFixed(2) },
    ]),
  ),
)
