// The board at volume (issue 39): a receiver and its board on one node:http server (a child process, as an app
// mounts them), LETTERS dead letters (default 100,000) in Redis, then in PostgreSQL.
// 1. Every page the board's console loads, over HTTP: median and p99 of ROUNDS requests each (target <= 300 ms).
// 2. Redis only: a live receiver's p99 under a steady signed load (RATE events/s, 2 ms handlers) while three
//    operators reload the overview in a loop (target <= 1.2x the baseline), and while a console replays all the
//    letters through the board (target <= 1.5x), each phase PHASE_S seconds, baseline in the same run; RUNS runs.
// Loopback only. Uses REDIS_URL / DATABASE_URL, or starts its own.
//   pnpm build && node bench/board-volume.bench.mjs   (LETTERS, ROUNDS=41, RUNS=3, RATE=200, PHASE_S=10, STORES=redis,postgres)
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { Agent, createServer, request } from 'node:http'
import { createBoard } from '@payhooks/board'
import { nodeBoard } from '@payhooks/board/node'
import { createWebhooks, deadLetterCursor, SIGNATURE_HEADER, sign } from '@payhooks/core'
import { nodeWebhooks } from '@payhooks/core/node'
import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { sampleEvent } from '@payhooks/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { startPostgres } from '../scripts/postgres-server.mjs'
import { median, percentile, SECRET, seedPostgres, seedRedis } from './dead-letters-seed.mjs'
import { startRedis } from './redis-server.mjs'

const LETTERS = Number(process.env.LETTERS ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 41)
const RUNS = Number(process.env.RUNS ?? 3)
const RATE = Number(process.env.RATE ?? 200)
const PHASE_S = Number(process.env.PHASE_S ?? 10)
const HANDLER_MS = 2
const BASE = '/board'
const TOKEN = 'B'.repeat(43)
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

const agent = new Agent({ keepAlive: true, maxSockets: 256 })

/** One request to the server; resolves with [status, body text, ms]. */
function call(port, method, path, { body, headers = {} } = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      const chunks = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () =>
        resolve([res.statusCode, Buffer.concat(chunks).toString(), Number(process.hrtime.bigint() - started) / 1e6]),
      )
    })
    req.on('error', reject)
    req.end(body)
  })
}

async function getJson(port, path) {
  const [status, text] = await call(port, 'GET', `${BASE}${path}`)
  if (status !== 200) throw new Error(`GET ${path}: ${status} ${text}`)
  return JSON.parse(text)
}

/** A state change as the board's page makes it: same origin, JSON, the cookie's CSRF token echoed. */
function change(port, path, json) {
  return call(port, 'POST', `${BASE}${path}`, {
    body: JSON.stringify(json),
    headers: {
      origin: `http://127.0.0.1:${port}`,
      'content-type': 'application/json',
      cookie: `payhooks_board_csrf=${TOKEN}`,
      'x-payhooks-board-csrf': TOKEN,
    },
  })
}

async function serve(kind, url, name) {
  const child = fork(new URL(import.meta.url).pathname, ['serve', kind, url, name], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const [{ port }] = await once(child, 'message')
  return { child, port }
}

const ms = (value) => `${value.toFixed(1)} ms`.padStart(10)

/** Every page of the board, ROUNDS times each: median and p99. */
async function pages(kind, port) {
  // The cursor a console holds after paging 90,000 letters down (what "older →" sends there).
  const deepCursor = await deepCursorOf(port)
  const deep = await getJson(port, `/api/dead-letters?limit=50&after=${deepCursor}`)
  if (deep.letters.length !== 50) throw new Error('the deep page is not full')
  const one = deep.letters[7].eventId
  const rows = [
    ['page (HTML)', () => call(port, 'GET', `${BASE}/`)],
    ['overview (shared within a second)', () => call(port, 'GET', `${BASE}/api/overview`)],
    ['letters, first page (50)', () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50`)],
    ['letters, 90,000 deep (keyset)', () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&after=${deepCursor}`)],
    [
      'letters, 90,000 deep, newer (keyset)',
      () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&before=${deep.newer}`),
    ],
    ['letters, offset 90,000 (old API)', () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&offset=90000`)],
    ['letters by code, first page', () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&code=handler_failed`)],
    [
      'letters by code, deep (keyset)',
      () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&code=handler_failed&after=${deepCursor}`),
    ],
    [
      'letters by type, first page',
      () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&eventType=transaction_settled`),
    ],
    [
      'letters by code and type',
      () => call(port, 'GET', `${BASE}/api/dead-letters?limit=50&code=handler_failed&eventType=transaction_settled`),
    ],
    ['letters by event id', () => call(port, 'GET', `${BASE}/api/dead-letters?eventId=${one}`)],
    ['one letter', () => call(port, 'GET', `${BASE}/api/dead-letters/${one}`)],
    ['count (replay-all confirm)', () => call(port, 'GET', `${BASE}/api/dead-letters/count?code=stale_event`)],
  ]
  console.log(`${kind}: board pages over HTTP, ${LETTERS} letters, ${ROUNDS} requests each`)
  for (const [what, page] of rows) {
    const samples = []
    await page() // warm
    for (let i = 0; i < ROUNDS; i++) {
      const [status, text, took] = await page()
      if (status !== 200) throw new Error(`${what}: ${status} ${text}`)
      samples.push(took)
    }
    console.log(`  ${what.padEnd(40)} median ${ms(median(samples))}  p99 ${ms(percentile(samples, 99))}`)
  }
  // The overview as one gathering costs (every load within a second shares one: these are OVERVIEW_MAX_AGE_MS apart).
  const fresh = []
  for (let i = 0; i < Math.min(ROUNDS, 11); i++) {
    await sleep(1_050)
    fresh.push((await call(port, 'GET', `${BASE}/api/overview`))[2])
  }
  console.log(
    `  ${'overview, gathered afresh (1 s apart)'.padEnd(40)} median ${ms(median(fresh))}  p99 ${ms(percentile(fresh, 99))}`,
  )
  // Replay all: a console confirms the count, then starts the run (its first request replays a batch of 50).
  const samples = []
  for (let i = 0; i < ROUNDS; i++) {
    const { count } = await getJson(port, '/api/dead-letters/count?code=stale_event')
    const [status, text, took] = await change(port, '/api/dead-letters/replay-matching', {
      filter: { code: 'stale_event' },
      confirmCount: count,
    })
    if (status !== 200) throw new Error(`replay-all start: ${status} ${text}`)
    samples.push(took)
  }
  console.log(
    `  ${'replay-all start (first batch of 50)'.padEnd(40)} median ${ms(median(samples))}  p99 ${ms(percentile(samples, 99))}`,
  )
}

/** The `older` cursor of the page that ends 90,000 letters down, as paging there by keyset would hand it. */
async function deepCursorOf(port) {
  const page = await getJson(port, `/api/dead-letters?limit=1&offset=${Math.min(89_999, LETTERS - 100)}`)
  return deadLetterCursor({ parkedAt: new Date(page.letters[0].parkedAt), eventId: page.letters[0].eventId })
}

let sent = 0
/** Deliveries at RATE/s for `seconds` (an open loop: each sent on time, whatever the others do): latencies in ms. */
async function liveLoad(port, seconds) {
  const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_live_@' }))
  const latencies = []
  const failures = []
  const waits = []
  const end = Date.now() + seconds * 1000
  const gap = 1000 / RATE
  for (let due = Date.now(); due < end; due += gap) {
    const wait = due - Date.now()
    if (wait > 0) await sleep(wait)
    const body = template.replace('evt_live_@', `evt_live_${process.pid}_${++sent}`)
    waits.push(
      sign(SECRET, body)
        .then((signature) =>
          call(port, 'POST', '/webhooks', {
            body,
            headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signature },
          }),
        )
        .then(([status, , took]) => (status === 200 ? latencies.push(took) : failures.push(status)))
        .catch((error) => failures.push(error.code)),
    )
  }
  await Promise.all(waits)
  return { p50: median(latencies), p99: percentile(latencies, 99), count: latencies.length, failures }
}

/** `operators` consoles reloading the overview in a loop until `stop()`: how many loads, and their median. */
function reloadOverview(port, operators) {
  let stopped = false
  const took = []
  const loops = Array.from({ length: operators }, async () => {
    while (!stopped) {
      const [status, , ms] = await call(port, 'GET', `${BASE}/api/overview`)
      if (status !== 200) throw new Error(`overview ${status}`)
      took.push(ms)
    }
  })
  return async () => {
    stopped = true
    await Promise.all(loops)
    return { loads: took.length, median: median(took) }
  }
}

/** A console replaying all parked letters through the board, batch after batch, until `stop()`. */
function replayThroughBoard(port) {
  let stopped = false
  let replayed = 0
  const loop = (async () => {
    const { count } = await getJson(port, '/api/dead-letters/count')
    let body = { filter: {}, confirmCount: count }
    while (!stopped) {
      const [status, text] = await change(port, '/api/dead-letters/replay-matching', body)
      if (status !== 200) throw new Error(`replay batch: ${status} ${text}`)
      const batch = JSON.parse(text)
      replayed += batch.outcomes.length
      if (batch.cursor === null) break
      body = { filter: {}, cursor: batch.cursor }
    }
  })()
  return async () => {
    stopped = true
    await loop
    return replayed
  }
}

/** Commands the Redis server has run so far (INFO commandstats): what a phase cost it, whatever the machine's load. */
async function redisCalls(redis) {
  const info = await redis.info('commandstats')
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, [, calls]) => sum + Number(calls), 0)
}

async function live(port, redis) {
  console.log(
    `redis: a live receiver's latency (${RATE} events/s, ${HANDLER_MS} ms handlers, ${PHASE_S} s a phase), ${RUNS} runs`,
  )
  const ratios = { overview: [], replay: [] }
  await liveLoad(port, 2) // warm
  for (let run = 1; run <= RUNS; run++) {
    let calls = await redisCalls(redis)
    const phaseCalls = async () => {
      const before = calls
      calls = await redisCalls(redis)
      return calls - before
    }
    const baseline = await liveLoad(port, PHASE_S)
    baseline.calls = await phaseCalls()
    const stopOverview = reloadOverview(port, 3)
    const overview = await liveLoad(port, PHASE_S)
    const operators = await stopOverview()
    overview.calls = await phaseCalls()
    const stopReplay = replayThroughBoard(port)
    const replay = await liveLoad(port, PHASE_S)
    const replayed = await stopReplay()
    replay.calls = await phaseCalls()
    ratios.overview.push(overview.p99 / baseline.p99)
    ratios.replay.push(replay.p99 / baseline.p99)
    const row = (what, r) =>
      `    ${what.padEnd(34)} p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  (${r.count} answered${r.failures.length ? `, ${r.failures.length} failed` : ''}; Redis ${Math.round(r.calls / PHASE_S)} commands/s)`
    console.log(`  run ${run}`)
    console.log(row('baseline', baseline))
    console.log(
      `${row('3 operators reloading the overview', overview)}  ${(overview.p99 / baseline.p99).toFixed(2)}x; ${operators.loads} overviews, median ${operators.median.toFixed(1)} ms`,
    )
    console.log(
      `${row('replay all through the board', replay)}  ${(replay.p99 / baseline.p99).toFixed(2)}x; ${replayed} letters replayed (${Math.round(replayed / PHASE_S)}/s)`,
    )
  }
  const range = (values) =>
    `median ${median(values).toFixed(2)}x (range ${Math.min(...values).toFixed(2)}x–${Math.max(...values).toFixed(2)}x)`
  console.log(
    `  p99 / baseline p99, over ${RUNS} runs: overview ${range(ratios.overview)}; replay ${range(ratios.replay)}`,
  )
}

async function main() {
  const stores = (process.env.STORES ?? 'redis,postgres').split(',')
  const start = Date.now() - LETTERS - 60_000
  if (stores.includes('redis')) {
    const redisServer = process.env.REDIS_URL ? undefined : await startRedis()
    const url = process.env.REDIS_URL ?? redisServer.url
    const redis = new Redis(url)
    const prefix = `{bench-board-${Date.now()}}:`
    const letters = redisDeadLetterStore(redis, { keyPrefix: prefix, commandTimeoutMs: 60_000 })
    await letters.init()
    const seeded = Date.now()
    await seedRedis(letters, LETTERS, start)
    console.log(`(seeded Redis in ${((Date.now() - seeded) / 1000).toFixed(1)} s)`)
    const { child, port } = await serve('redis', url, prefix)
    await pages('redis', port)
    await live(port, redis)
    child.disconnect()
    for (let cursor = '0'; ; ) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000)
      if (keys.length > 0) await redis.unlink(...keys)
      cursor = next
      if (cursor === '0') break
    }
    redis.disconnect()
    await redisServer?.stop()
  }
  if (stores.includes('postgres')) {
    const pgServer = process.env.DATABASE_URL ? undefined : await startPostgres()
    const url = process.env.DATABASE_URL ?? pgServer.url
    const pool = new pg.Pool({ connectionString: url, max: 4 })
    const table = `bench_board_${Date.now()}`
    const letters = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
    await letters.init()
    const seeded = Date.now()
    await seedPostgres(pool, table, LETTERS, start)
    console.log(`(seeded PostgreSQL in ${((Date.now() - seeded) / 1000).toFixed(1)} s)`)
    const { child, port } = await serve('postgres', url, table)
    await pages('postgres', port)
    child.disconnect()
    await sleep(200)
    const { rows } = await pool.query('SELECT tablename FROM pg_tables WHERE tablename LIKE $1', [`${table}%`])
    for (const { tablename } of rows) await pool.query(`DROP TABLE IF EXISTS ${tablename} CASCADE`)
    await pool.end()
    await pgServer?.stop()
  }
  agent.destroy()
}

if (process.argv[2] === 'serve') serveApp()
else await main()

function serveApp() {
  // The app: receiver on /webhooks, board on /board, both over the same stores.
  const [, , , kind, url, name] = process.argv
  let store
  let deadLetters
  if (kind === 'redis') {
    const redis = new Redis(url)
    store = redisStore(redis, { keyPrefix: `${name}events:` })
    deadLetters = redisDeadLetterStore(redis, { keyPrefix: name })
  } else {
    const pool = new pg.Pool({ connectionString: url, max: 10 })
    store = postgresStore(pool, { table: `${name}_events` })
    deadLetters = postgresDeadLetterStore(pool, { table: name, sweepIntervalMs: 0 })
  }
  const quiet = { error() {}, warn() {}, info() {} }
  const webhooks = createWebhooks({ secret: SECRET, store, deadLetters, maxConcurrentEvents: 16, logger: quiet })
  webhooks.onAny(() => sleep(HANDLER_MS))
  const board = createBoard({ webhooks, authorize: () => true, logger: quiet })
  const receive = nodeWebhooks(webhooks)
  const serveBoard = nodeBoard(board, { path: BASE })
  const server = createServer((req, res) => {
    if (req.url === '/webhooks') return receive(req, res)
    if (serveBoard(req, res)) return
    res.writeHead(404).end()
  })
  // Longer than the bench's pauses, so no kept-alive socket is closed under a request.
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))
  process.on('disconnect', () => process.exit(0))
}
