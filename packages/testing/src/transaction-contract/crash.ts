import { type ChildProcess, spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { pathToFileURL } from 'node:url'
import { sampleEvent } from '../samples.js'
import { signedDelivery } from '../signing.js'

export const POINTS = ['before_write', 'after_write', 'after_commit'] as const

/**
 * A receiver process of the crash test: the store and the write of the module PAYHOOKS_RECEIVER, a handler that writes
 * one ledger row per run, and SIGKILL at an event's planned point the first time any process reaches it (a file made
 * with O_EXCL in PAYHOOKS_CRASH_DIR says it was). Prints {"port":N} once listening.
 */
const RECEIVER = `
import { createServer } from 'node:http'
import { closeSync, openSync } from 'node:fs'
import { join } from 'node:path'
const env = process.env
const binding = await import(env.PAYHOOKS_RECEIVER)
const { createWebhooks } = binding.createWebhooks ? binding : await import('@payhooks/core')
const plan = new Map(Object.entries(JSON.parse(env.PAYHOOKS_CRASH_PLAN)))
function crashPoint(eventId, point) {
  if (plan.get(eventId) !== point) return
  try {
    closeSync(openSync(join(env.PAYHOOKS_CRASH_DIR, point + '.' + eventId), 'wx'))
  } catch {
    return
  }
  process.kill(process.pid, 'SIGKILL')
}
const store = await binding.makeStore(env.PAYHOOKS_TABLE)
const webhooks = createWebhooks({
  secret: env.PAYHOOKS_SECRET,
  store,
  leaseMs: Number(env.PAYHOOKS_LEASE_MS),
  deadlineMs: Number(env.PAYHOOKS_DEADLINE_MS),
  logger: { error() {}, warn() {}, info() {} },
})
webhooks.onAny(async (event, context) => {
  await new Promise((resolve) => setTimeout(resolve, Math.random() * 3))
  crashPoint(event.event_id, 'before_write')
  await binding.write(context.db, env.PAYHOOKS_LEDGER, event.event_id)
  crashPoint(event.event_id, 'after_write')
})
const server = createServer((request, response) => {
  const chunks = []
  request.on('data', (chunk) => chunks.push(chunk))
  request.on('end', async () => {
    const result = await webhooks.receive({
      method: request.method,
      body: Buffer.concat(chunks),
      getHeader: (name) => request.headers[name],
    })
    if (result.status === 200) crashPoint(request.headers['x-event-id'], 'after_commit')
    response.writeHead(result.status, result.headers).end(result.body)
  })
})
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\\n'))
process.on('SIGTERM', () => process.exit(0))
`

const INSTANCES = 2
const COPIES = 2
const CONCURRENCY = 8
/** The service's hour between retries, shortened. */
const RETRY_MS = 100
const LEASE_MS = 1500
const DEADLINE_MS = 1200

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Receiver processes on `env`, each started again whenever it dies, until `stop()`. */
function fleet(env: Record<string, string>) {
  const ports: (number | undefined)[] = Array.from({ length: INSTANCES }, () => undefined)
  const children = new Set<ChildProcess>()
  let stopping = false
  let kills = 0
  let failure = ''
  const start = async (slot: number): Promise<void> => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', RECEIVER], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.add(child)
    let stderr = ''
    child.stderr?.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('exit', (code, signal) => {
      children.delete(child)
      ports[slot] = undefined
      if (stopping) return
      if (signal === 'SIGKILL') kills++
      else failure ||= `a receiver exited (${code ?? signal}) before it was stopped: ${stderr.trim().slice(0, 2000)}`
      if (signal === 'SIGKILL') void start(slot)
    })
    for await (const line of createInterface({ input: child.stdout as NodeJS.ReadableStream })) {
      ports[slot] = (JSON.parse(line) as { port: number }).port
      break
    }
  }
  return {
    ports,
    kills: () => kills,
    failure: () => failure,
    start: () => Promise.all(ports.map((_, slot) => start(slot))),
    async stop() {
      stopping = true
      await Promise.all(
        [...children].map(async (child) => {
          const exited = once(child, 'exit')
          child.kill('SIGTERM')
          await exited
        }),
      )
    },
  }
}

/** Delivers each event COPIES times, each copy again after RETRY_MS until some receiver answers it 2XX. */
async function deliverAll(ids: string[], secret: string, ports: (number | undefined)[], failure: () => string) {
  const events = await Promise.all(
    ids.map(async (eventId) => ({
      eventId,
      ...(await signedDelivery(sampleEvent('transaction_settled', { eventId }), secret)),
    })),
  )
  const jobs = events.flatMap((event) => Array.from({ length: COPIES }, () => event))
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < jobs.length) {
        const { eventId, body, headers } = jobs[next++] as (typeof jobs)[number]
        for (let attempt = 0; ; attempt++) {
          if (failure()) throw new Error(failure())
          if (attempt > 300) throw new Error(`${eventId} was never acknowledged`)
          const live = ports.filter((port) => port !== undefined)
          const port = live[Math.floor(Math.random() * live.length)]
          try {
            if (port === undefined) throw new Error('no receiver up')
            const response = await fetch(`http://127.0.0.1:${port}/webhooks`, {
              method: 'POST',
              body,
              headers: { ...headers, 'x-event-id': eventId },
              signal: AbortSignal.timeout(10_000),
            })
            await response.text()
            if (response.ok) break
          } catch {
            // No answer: the receiver died with the delivery, as the service sees it.
          }
          await sleep(RETRY_MS)
        }
      }
    }),
  )
}

/**
 * Runs receiver processes on the module `receiver`, kills them (SIGKILL) at planned points of `killsPerPoint` events
 * per point, delivers `events` events twice each with retries, and answers what it saw: how many processes were
 * killed, the kills fired at each point, and how many times each event's write is in the ledger.
 */
export async function crashRun(options: {
  receiver: string | URL
  table: string
  ledger: string
  secret: string
  events: number
  killsPerPoint: number
}) {
  const run = Math.random().toString(36).slice(2, 10)
  const ids = Array.from({ length: options.events }, (_, i) => `evt_crash_${run}_${i}`)
  const plan: Record<string, string> = {}
  const picked = [...ids].sort(() => Math.random() - 0.5).slice(0, options.killsPerPoint * POINTS.length)
  for (const [i, eventId] of picked.entries()) plan[eventId] = POINTS[i % POINTS.length] as string
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-crash-'))
  const receiver = typeof options.receiver === 'string' ? pathToFileURL(options.receiver).href : options.receiver.href
  const receivers = fleet({
    PAYHOOKS_RECEIVER: receiver,
    PAYHOOKS_CRASH_PLAN: JSON.stringify(plan),
    PAYHOOKS_CRASH_DIR: dir,
    PAYHOOKS_TABLE: options.table,
    PAYHOOKS_LEDGER: options.ledger,
    PAYHOOKS_SECRET: options.secret,
    PAYHOOKS_LEASE_MS: String(LEASE_MS),
    PAYHOOKS_DEADLINE_MS: String(DEADLINE_MS),
  })
  try {
    await receivers.start()
    await deliverAll(ids, options.secret, receivers.ports, receivers.failure)
  } finally {
    await receivers.stop()
  }
  const fired: Record<string, number> = {}
  for (const file of readdirSync(dir)) {
    const point = file.slice(0, file.indexOf('.'))
    fired[point] = (fired[point] ?? 0) + 1
  }
  rmSync(dir, { recursive: true, force: true })
  return { ids, kills: receivers.kills(), fired }
}
