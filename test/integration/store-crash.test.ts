// Receivers killed by SIGKILL at random points inside their handlers, restarted, and the service's retry rule
// (deliver again after a failure or no answer; the hour shortened to RETRY_MS): four receiver processes, 1 000
// events each delivered three times, a business table in PostgreSQL written once per handler run.
// - postgresStore: the handler writes through context.db, in the transaction of the done marker. The table must
//   end with exactly one row per event, none missing.
// - redisStore: the handler writes to PostgreSQL on its own connection, the done marker goes to Redis. None may
//   be missing; events killed between their write and their done marker run twice: the figure is reported.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { once } from 'node:events'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'

const { REDIS_URL, DATABASE_URL } = process.env
if (!REDIS_URL || !DATABASE_URL) {
  throw new Error('REDIS_URL and DATABASE_URL are needed: run these tests through `pnpm test` (node scripts/test.mjs)')
}
const INSTANCES = 4
const EVENTS = 1000
const COPIES = 3
const CONCURRENCY = 32
/** The service's hour between retries, shortened. */
const RETRY_MS = 150
/** Planned crashes per point; more happen, since a crash kills the other events in flight in that process. */
const CRASHES_PER_POINT = 8
const POINTS = ['before_write', 'after_write', 'after_commit'] as const
const LEASE_MS = 1200
const DEADLINE_MS = 1000

const fixture = join(import.meta.dirname, '../fixtures/crash-receiver.mjs')
const secret = 'whsec_crash_test'
const admin = new pg.Pool({ connectionString: DATABASE_URL, max: 2 })
const redis = new Redis(REDIS_URL)
const dropped: string[] = []

afterAll(async () => {
  for (const table of dropped) await admin.query(`DROP TABLE IF EXISTS ${table}`)
  await admin.end()
  redis.disconnect()
})

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Four receiver processes, each restarted whenever it dies, until `stop()`. */
function fleet(env: Record<string, string>) {
  const ports: (number | undefined)[] = Array.from({ length: INSTANCES }, () => undefined)
  const children = new Set<ChildProcess>()
  let stopping = false
  let deaths = 0
  const start = async (slot: number): Promise<void> => {
    const child = spawn(process.execPath, [fixture], {
      env: { ...process.env, ...env, SECRET: secret, LEASE_MS: String(LEASE_MS), DEADLINE_MS: String(DEADLINE_MS) },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.add(child)
    child.on('exit', (_code, signal) => {
      children.delete(child)
      ports[slot] = undefined
      if (stopping) return
      if (signal === 'SIGKILL') deaths++
      void start(slot)
    })
    for await (const line of createInterface({ input: child.stdout! })) {
      ports[slot] = (JSON.parse(line) as { port: number }).port
      break
    }
  }
  return {
    ports,
    deaths: () => deaths,
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

/** Delivers every event COPIES times, each copy again after RETRY_MS until some instance answers it 2XX. */
async function deliverAll(ports: (number | undefined)[], run: string) {
  const events = await Promise.all(
    Array.from({ length: EVENTS }, async (_, i) => {
      const eventId = `evt_${run}_${i}`
      return { eventId, ...(await signedDelivery(sampleEvent('transaction_settled', { eventId }), secret)) }
    }),
  )
  const jobs = events.flatMap((event) => Array.from({ length: COPIES }, () => event))
  const outcomes = { attempts: 0, noAnswer: 0, refused: new Map<number, number>() }
  let next = 0
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < jobs.length) {
        const { eventId, body, headers } = jobs[next++]!
        for (let attempt = 0; ; attempt++) {
          if (attempt > 400) throw new Error(`${eventId} never acknowledged`)
          const live = ports.filter((port) => port !== undefined)
          const port = live[Math.floor(Math.random() * live.length)]
          outcomes.attempts++
          try {
            if (port === undefined) throw new Error('no instance up')
            const response = await fetch(`http://127.0.0.1:${port}/webhooks`, {
              method: 'POST',
              body,
              headers: { ...headers, 'x-event-id': eventId },
              signal: AbortSignal.timeout(10_000),
            })
            await response.text()
            if (response.ok) break
            outcomes.refused.set(response.status, (outcomes.refused.get(response.status) ?? 0) + 1)
          } catch {
            outcomes.noAnswer++
          }
          await sleep(RETRY_MS)
        }
      }
    }),
  )
  return outcomes
}

async function crashRun(store: 'postgres' | 'redis') {
  const run = `${store}_${randomUUID().replaceAll('-', '').slice(0, 10)}`
  const [ledger, crashPlan, table] = [`ledger_${run}`, `crash_plan_${run}`, `events_${run}`]
  dropped.push(ledger, crashPlan, table)
  await admin.query(`CREATE TABLE ${ledger} (id bigserial PRIMARY KEY, event_id text NOT NULL, pid int NOT NULL)`)
  await admin.query(
    `CREATE TABLE ${crashPlan} (event_id text PRIMARY KEY, point text NOT NULL, fired boolean NOT NULL DEFAULT false)`,
  )
  // Random events die once each, at a random one of the points (the same number at each).
  const picked = new Set<string>()
  while (picked.size < CRASHES_PER_POINT * POINTS.length) picked.add(`evt_${run}_${Math.floor(Math.random() * EVENTS)}`)
  for (const [i, eventId] of [...picked].entries()) {
    await admin.query(`INSERT INTO ${crashPlan} (event_id, point) VALUES ($1, $2)`, [
      eventId,
      POINTS[i % POINTS.length],
    ])
  }

  const receivers = fleet({
    STORE: store,
    TABLE: table,
    KEY_PREFIX: `crash:${run}:`,
    LEDGER: ledger,
    CRASH_PLAN: crashPlan,
  })
  const started = Date.now()
  await receivers.start()
  let outcomes: Awaited<ReturnType<typeof deliverAll>>
  try {
    outcomes = await deliverAll(receivers.ports, run)
  } finally {
    await receivers.stop()
  }
  const seconds = (Date.now() - started) / 1000

  const counts = new Map(
    (
      await admin.query<{ event_id: string; runs: number }>(
        `SELECT event_id, count(*)::int AS runs FROM ${ledger} GROUP BY event_id`,
      )
    ).rows.map((row) => [row.event_id, row.runs]),
  )
  const missing = Array.from({ length: EVENTS }, (_, i) => `evt_${run}_${i}`).filter((id) => !counts.has(id))
  const twice = [...counts.values()].filter((runs) => runs > 1).length
  const fired = (
    await admin.query(`SELECT point, count(*)::int AS n FROM ${crashPlan} WHERE fired GROUP BY point ORDER BY point`)
  ).rows
  const summary = {
    store,
    events: EVENTS,
    deliveries: EVENTS * COPIES,
    processKills: receivers.deaths(),
    plannedCrashesFired: Object.fromEntries(fired.map((row) => [row.point, row.n])),
    eventsMissing: missing.length,
    eventsRunTwiceOrMore: twice,
    rows: [...counts.values()].reduce((sum, n) => sum + n, 0),
    attempts: outcomes.attempts,
    noAnswer: outcomes.noAnswer,
    refused: Object.fromEntries(outcomes.refused),
    seconds,
  }
  console.log(`crash test: ${JSON.stringify(summary)}`)
  return { summary, missing, twice, fired }
}

// Each run takes 35-40 s on a quiet 2-core machine and several times that under load (over 120 s with two whole runs
// side by side and benches beside them): the timeouts only stop a run that hangs.
describe('receivers killed inside their handlers, events retried as the service does', () => {
  it(`postgresStore: ${EVENTS} events x${COPIES}, ${INSTANCES} processes SIGKILLed at random points: exactly one row per event`, async () => {
    const { summary, missing, twice, fired } = await crashRun('postgres')
    expect(fired).toEqual([...POINTS].sort().map((point) => ({ point, n: CRASHES_PER_POINT })))
    expect(summary.processKills).toBeGreaterThanOrEqual(CRASHES_PER_POINT * POINTS.length)
    expect(missing).toEqual([])
    expect(twice).toBe(0)
    expect(summary.rows).toBe(EVENTS)
  }, 600_000)

  it(`redisStore (writes outside the store): none lost, and events killed between write and done marker run twice`, async () => {
    const { summary, missing, twice, fired } = await crashRun('redis')
    expect(fired).toEqual([...POINTS].sort().map((point) => ({ point, n: CRASHES_PER_POINT })))
    expect(missing).toEqual([])
    // Each planned kill between the write and the done marker leaves a row, and the retry writes another.
    expect(twice).toBeGreaterThanOrEqual(CRASHES_PER_POINT)
    expect(summary.rows).toBeGreaterThan(EVENTS)
  }, 600_000)
})
