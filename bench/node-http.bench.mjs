// The kit on plain node:http (nodeWebhooks + memoryStore) against a minimal hand-written receiver
// (raw bytes, createHmac, timingSafeEqual, JSON.parse, a Set) and against node:http's own floor (read the
// body, answer 200), each server in its own child process, 32 connections, rotating rounds, medians.
// Then a memory table: RSS and heap after a warm-up that fills the default memoryStore, and after 1,000,000 more
// distinct events through receive()
// (BENCH_NO_MEMORY=1 leaves it out). A fourth server, `glue`, runs the kit's node:http glue around the hand-written
// check, to split the kit's gap between the glue and core's per-event work (BENCH_VARIANTS=floor,baseline,kit leaves
// it out). `kit-await`, not run by default, is the kit behind `await receiveNodeRequest(…)` in an async listener.
//   pnpm bench node-http
import { fork } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import {
  compareRounds,
  handWrittenCheck,
  SECRET,
  SIGNATURE_HEADER,
  serveChild,
  startServer,
  stopServers,
} from './http-load.mjs'

const ROUNDS = 7
const ROUND_SECONDS = 2
const WARMUP_SECONDS = 2
const CONNECTIONS = 32
const VARIANTS = (process.env.BENCH_VARIANTS ?? 'floor,baseline,glue,kit').split(',')
const MEMORY_EVENTS = 1_000_000
const MEMORY_WARMUP = 200_000

const JSON_HEADERS = { 'content-type': 'application/json' }

const servers = {
  /** node:http reading the body and answering 200: no check at all. */
  floor: () =>
    createServer((req, res) => {
      req.on('data', () => {})
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}')
      })
    }),
  baseline: () => {
    const check = handWrittenCheck()
    return createServer((req, res) => {
      const chunks = []
      req.on('data', (chunk) => chunks.push(chunk))
      req.on('end', () => {
        const answer = check(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks), req.headers[SIGNATURE_HEADER])
        if (answer === undefined) return res.writeHead(401).end()
        res.writeHead(200, JSON_HEADERS).end(JSON.stringify(answer))
      })
    })
  },
  /**
   * The kit's node:http glue (`nodeWebhooks`: the body by callback, the answer by callback, `writeNodeAnswer`)
   * around the hand-written check instead of core's `respond`: splits the kit's gap into the glue's part and
   * core's per-event work.
   */
  glue: async () => {
    const { nodeWebhooks } = await import('@payhooks/core/node')
    const check = handWrittenCheck()
    const refused = { status: 401, headers: {}, body: '' }
    const receiver = {
      maxBodyBytes: 1_048_576,
      reject: () => refused,
      receive: () => Promise.reject(new Error('the glue answers through respond')),
      respond: (raw, send) =>
        raw.body.then((body) => {
          const answer = check(body, raw.getHeader(SIGNATURE_HEADER))
          send(answer === undefined ? refused : { status: 200, headers: JSON_HEADERS, body: JSON.stringify(answer) })
        }),
    }
    return createServer(nodeWebhooks(receiver))
  },
  /** The kit as its README mounts it on node:http: `nodeWebhooks`, the answer written from a callback. */
  kit: async () => {
    const { nodeWebhooks } = await import('@payhooks/core/node')
    return createServer(nodeWebhooks(await kitReceiver()))
  },
  /**
   * The body reader against raw-body (issue 31: keep a hand-made one only where it saves ≥ 3% of the hot path),
   * not run by default: the same receiver and listener, `receive` given the body as a promise, read by core's
   * `readNodeBody` or by raw-body (`BENCH_VARIANTS=kit,kit-read,kit-raw-body`).
   */
  'kit-read': async () => {
    const { readNodeBody } = await import('@payhooks/core/node')
    return promisedBodyServer(await kitReceiver(), (req, limit) => readNodeBody(req, limit).body)
  },
  'kit-raw-body': async () => {
    const { default: getRawBody } = await import('raw-body')
    return promisedBodyServer(await kitReceiver(), (req, limit) =>
      getRawBody(req, { length: req.headers['content-length'], limit }),
    )
  },
  /** The kit behind `await receiveNodeRequest(…)` in an async listener (a promise per request): not run by default. */
  'kit-await': async () => {
    const { receiveNodeRequest } = await import('@payhooks/core/node')
    const webhooks = await kitReceiver()
    return createServer(async (req, res) => {
      const { status, headers, body } = await receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
      res.writeHead(status, headers).end(body)
    })
  },
}

function promisedBodyServer(webhooks, read) {
  return createServer((req, res) => {
    const body = read(req, webhooks.maxBodyBytes)
    webhooks
      .receive({ body, getHeader: (name) => req.headers[name] })
      .then(({ status, headers, body }) => res.writeHead(status, headers).end(body))
  })
}

async function kitReceiver() {
  const { createWebhooks, memoryStore } = await import('@payhooks/core')
  // Room for every event of the run, so the store never evicts: this measures the request path.
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore({ maxEntries: 2_000_000 }) })
  webhooks.on('transaction_settled', () => {})
  return webhooks
}

async function memoryRow() {
  const { createWebhooks, memoryStore, sign } = await import('@payhooks/core')
  const { sampleEvent } = await import('@payhooks/testing')
  const store = memoryStore({ logger: { error() {}, warn() {} } })
  const webhooks = createWebhooks({ secret: SECRET, store })
  webhooks.on('transaction_settled', () => {})
  const template = JSON.stringify(sampleEvent('transaction_settled', { eventId: 'evt_mem_@' }))
  let next = 0
  const receiveMany = async (count) => {
    for (let i = 0; i < count; i++) {
      const body = Buffer.from(template.replace('evt_mem_@', `evt_mem_${next++}`))
      const signature = await sign(SECRET, body)
      const result = await webhooks.receive({
        body,
        getHeader: (n) => (n === SIGNATURE_HEADER ? signature : undefined),
      })
      if (result.status !== 200) throw new Error(`answered ${result.status}`)
    }
  }
  const usage = () => {
    globalThis.gc?.()
    return process.memoryUsage()
  }
  const start = usage()
  // Enough to fill the store to maxEntries and let V8 size its heap and compile the path.
  await receiveMany(MEMORY_WARMUP)
  const warm = usage()
  const checkpoints = []
  for (let done = 0; done < MEMORY_EVENTS; done += MEMORY_EVENTS / 4) {
    await receiveMany(MEMORY_EVENTS / 4)
    checkpoints.push(usage())
  }
  const end = checkpoints.at(-1)
  // Documented: about 200 bytes per entry, at most maxEntries (100,000) done markers.
  return { start, warm, checkpoints, end, bound: 100_000 * 200, size: store.size }
}

async function main() {
  console.log(
    `${ROUNDS} rounds of ${ROUND_SECONDS} s per server (after ${WARMUP_SECONDS} s warm-up), ${CONNECTIONS} connections, ` +
      `Node ${process.version}; each request a new signed ~600-byte transaction_settled event.\n`,
  )
  const running = {}
  for (const variant of VARIANTS) running[variant] = await startServer(import.meta.filename, ['serve', variant])
  let result
  try {
    result = await compareRounds(running, {
      label: 'node:http',
      rounds: ROUNDS,
      roundSeconds: ROUND_SECONDS,
      warmupSeconds: WARMUP_SECONDS,
      connections: CONNECTIONS,
    })
  } finally {
    stopServers(running)
  }
  const { ratio, medianRps, medianP99, medianCpu, cpuRatio, problems } = result
  const header = [
    'server',
    'req/s',
    'p99 ms',
    'vs hand-written',
    'vs node:http floor',
    'server CPU µs/req',
    'CPU: hand-written/this',
  ]
  console.log(`\n| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
  for (const v of VARIANTS) {
    console.log(
      `| ${v} | ${medianRps(v)} | ${medianP99(v)} | ${ratio(v, 'baseline')} | ${ratio(v, 'floor')} | ${medianCpu(v)} | ${cpuRatio(v, 'baseline')} |`,
    )
  }
  console.log(
    '\nreq/s, p99: medians over the rounds; ratios: median of per-round ratios; server CPU: user+system time of the server process per answered request (steadier than req/s while the load generator shares the cores). Targets (issue 23): kit 0.95x the hand-written receiver or more, 0.85x the floor or more; glue: the kit’s node:http glue around the hand-written check.',
  )
  if (process.env.BENCH_NO_MEMORY) return finish(problems)
  // In a fresh process, so the load's request bodies are not in its RSS.
  const child = fork(import.meta.filename, ['memory'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  const [mem] = await once(child, 'message')
  child.kill()
  const mb = (x) => (x / 1048576).toFixed(1)
  console.log(
    '\n| memory, default memoryStore() | RSS MB | heap used MB | store entries |\n|---|---|---|---|\n' +
      `| process start | ${mb(mem.start.rss)} | ${mb(mem.start.heapUsed)} | 0 |\n` +
      `| after ${MEMORY_WARMUP} events (store full) | ${mb(mem.warm.rss)} | ${mb(mem.warm.heapUsed)} | |\n` +
      mem.checkpoints
        .map(
          (m, i) =>
            `| after ${MEMORY_WARMUP} + ${((i + 1) * MEMORY_EVENTS) / 4} events | ${mb(m.rss)} | ${mb(m.heapUsed)} | ${i === 3 ? mem.size : ''} |`,
        )
        .join('\n'),
  )
  console.log(
    `\nOver the last ${MEMORY_EVENTS} events: RSS from ${mb(mem.warm.rss)} to ${mb(mem.end.rss)} MB (highest ${mb(Math.max(...mem.checkpoints.map((m) => m.rss)))}), heap ${mb(mem.end.heapUsed - mem.warm.heapUsed)} MB; ` +
      `whole run: heap ${mb(mem.end.heapUsed - mem.start.heapUsed)} MB against the documented bound of ${mb(mem.bound)} MB ` +
      '(100,000 done markers at about 200 bytes). RSS also holds V8 and allocator reserves that grow once, in the warm-up.',
  )
  finish(problems)
}

function finish(problems) {
  if (problems) {
    console.log(`${problems} round(s) had failed requests or reused bodies: see above.`)
    process.exit(1)
  }
}

if (process.argv[2] === 'memory') {
  process.on('disconnect', () => process.exit(0))
  process.send(await memoryRow())
} else if (process.argv[2] === 'serve') {
  const server = await servers[process.argv[3]]()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  serveChild(server.address().port)
} else {
  await main()
}
