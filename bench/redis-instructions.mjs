// The instructions redis-server runs per event (valgrind callgrind, user space), for choices the noisy timings of
// redis-ordered cannot settle (issue 49): claims of N new events, their completes, then claims of them again
// (duplicates), each counted alone with callgrind_control; a PING for scale. Deterministic whatever the machine's load.
// Not run by `pnpm bench`; needs valgrind. Run: node bench/redis-instructions.mjs [dist/index.js of @payhooks/redis...]
// (default: this checkout's, then BENCH_BASELINE's when set; ORDERED=1 for ordered events; N, default 500).
// LIVE=k: the claims meet k generations of done markers, as after days of traffic (5 at the default retention, each
// of which a claim reads), W events handled in each (default 20), this process's clock (Date.now) moved a generation
// at a time; the measured events are in the newest.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { Redis } from 'ioredis'
import { freePort } from './redis-server.mjs'

const N = Number(process.env.N ?? 500)
const LIVE = Number(process.env.LIVE ?? 1)
const W = Number(process.env.W ?? 20)
const RETENTION_MS = 73 * 3_600_000
/** A generation of markers: a quarter of the retention (packages/redis/src/layout.ts). */
const GENERATION_MS = Math.ceil(RETENTION_MS / Number(process.env.GENERATIONS ?? 4))
const realNow = Date.now
let shift = 0
Date.now = () => realNow() + shift
const ordered = process.env.ORDERED === '1'
const paths = process.argv.slice(2)
if (paths.length === 0) {
  paths.push(new URL('../packages/redis/dist/index.js', import.meta.url).pathname)
  if (process.env.BENCH_BASELINE) paths.push(process.env.BENCH_BASELINE)
}
const dir = mkdtempSync(join(tmpdir(), 'payhooks-callgrind-'))
const port = await freePort()
const proc = spawn(
  'valgrind',
  [
    '--tool=callgrind',
    '--instr-atstart=no',
    `--callgrind-out-file=${dir}/cg.out`,
    'redis-server',
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ],
  { stdio: 'ignore' },
)
process.on('exit', () => proc.kill('SIGKILL'))
const url = `redis://127.0.0.1:${port}`
for (let i = 0; ; i++) {
  try {
    const r = new Redis(url, { lazyConnect: true, retryStrategy: () => null })
    r.on('error', () => {})
    await r.connect()
    await r.ping()
    r.disconnect()
    break
  } catch {
    if (i > 100) throw new Error('redis-server under valgrind did not start')
    await new Promise((r) => setTimeout(r, 300))
  }
}
const ctl = (...a) => execFileSync('callgrind_control', [...a, String(proc.pid)], { stdio: 'pipe' }).toString()
function readIr() {
  // the newest dump file's summary
  const files = readdirSync(dir)
    .filter((f) => /^cg\.out\.\d+$/.test(f))
    .sort((a, b) => Number(a.slice(7)) - Number(b.slice(7)))
  const text = readFileSync(`${dir}/${files.at(-1)}`, 'utf8')
  return Number(/^totals: (\d+)/m.exec(text)[1])
}
async function measure(fn) {
  ctl('-z')
  ctl('-i', 'on')
  await fn()
  ctl('-i', 'off')
  ctl('-d')
  return readIr() / N
}
async function par(fn) {
  let next = 0
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < N) {
        const i = next++
        await fn(i)
      }
    }),
  )
}
for (const [k, p] of paths.entries()) {
  const mod = await import(pathToFileURL(p).href)
  const client = new Redis(url)
  const store = mod.redisStore(client, { keyPrefix: `cg:${k}:`, commandTimeoutMs: 120000, retentionMs: RETENTION_MS })
  const pos = (i) =>
    ordered ? { key: `txn_${i}`, at: 1_764_000_000_000 + i, eventType: 'transaction_settled' } : undefined
  for (let g = 0; g < LIVE; g++) {
    shift = g * GENERATION_MS
    for (let i = 0; i < W; i++) {
      const c = await store.claim(`w${g}_${i}`, 60000, 'ab'.repeat(16), pos(1e6 + g * W + i))
      await store.complete(`w${g}_${i}`, c.token)
    }
  }
  const tokens = []
  const claim = await measure(() =>
    par(async (i) => {
      const c = await store.claim(`e${i}`, 60000, 'ab'.repeat(16), pos(i))
      tokens[i] = c.token
    }),
  )
  const complete = await measure(() =>
    par(async (i) => {
      await store.complete(`e${i}`, tokens[i])
    }),
  )
  const dup = await measure(() =>
    par(async (i) => {
      const c = await store.claim(`e${i}`, 60000, 'ab'.repeat(16), pos(i))
      if (c.status !== 'done') throw new Error(c.status)
    }),
  )
  const ping = await measure(() => par(() => client.ping()))
  console.log(
    `${p.split('/').slice(-3).join('/')} ${ordered ? 'ordered' : 'unordered'}, ${LIVE} live generation${LIVE === 1 ? '' : 's'}: instructions per event claim ${Math.round(claim)} complete ${Math.round(complete)} (sum ${Math.round(claim + complete)}) dup ${Math.round(dup)}; ping ${Math.round(ping)}`,
  )
  client.disconnect()
  shift = 0
}
proc.kill('SIGKILL')
if (!process.env.KEEP) rmSync(dir, { recursive: true, force: true })
process.exit(0)
