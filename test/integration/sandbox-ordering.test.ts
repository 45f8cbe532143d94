// Ordering fences under the sandbox's chaos (spec 6.1.4: messages arrive out of order and more than once): many
// transactions, each settled then returned, delivered with seeded reordering and duplicates to core's receiver with
// the README's recipe (ordering rules, handlers skipping superseded events). Every transaction must end returned.
// The same deliveries to a receiver without fences end some transactions settled: the chaos does reorder them.
import { randomUUID } from 'node:crypto'
import { createWebhooks, type WebhookError, type WebhookStore } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { redisStore } from '@payhooks/redis'
import { createManualClock, createSandbox } from '@payhooks/sandbox'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { databaseUrl } from '../fixtures/postgres.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'
import { serveLater, webhooksListener } from '../fixtures/sandbox-receivers.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const START = Math.floor(Date.now() / HOUR) * HOUR
const TRANSACTIONS = 120
const CHAOS = { seed: 20261124, duplicateRate: 0.3, reorderRate: 0.5, maxDelayMs: 40 }

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test`, which starts redis-server')

const closers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

interface Run {
  /** Final status per transaction. */
  status: Map<string, string>
  /** Event types per transaction, in the order their handlers first ran. */
  applied: Map<string, string[]>
  /** Failures reported. */
  unexpected: string[]
  /** Sends answered 409 in_progress: a copy of an event, or another event of its transaction, was running. */
  inProgress: number
  /** Sends made by the sandbox, and how many were duplicates. */
  sends: number
  duplicates: number
}

/** Emits settled then returned for every transaction under chaos, runs 80 hours of retries, and tells the outcome. */
async function chaosRun(fenced: boolean, store?: WebhookStore): Promise<Run> {
  const sandbox = createSandbox({ clock: createManualClock({ start: START }), chaos: CHAOS })
  closers.push(() => sandbox.close())
  const served = await serveLater()
  closers.push(served.close)
  const { signature_secret: secret } = sandbox.subscribe({
    url: served.url,
    eventTypes: ['transaction_settled', 'transaction_returned'],
  })
  const run: Run = { status: new Map(), applied: new Map(), unexpected: [], inProgress: 0, sends: 0, duplicates: 0 }
  const byTransaction = { key: (e: { data: { transaction_id: string } }) => e.data.transaction_id }
  const webhooks = createWebhooks({
    secret,
    store,
    ordering: fenced
      ? {
          transaction_settled: { ...byTransaction, at: (e) => e.data.settlement_date },
          transaction_returned: { ...byTransaction, at: (e) => e.data.settlement_date },
        }
      : undefined,
  })
  const apply = async (transactionId: string, type: string, status: string) => {
    // Asynchronous like a real ledger write, so deliveries of one transaction overlap; a settlement's write is the
    // slower, so a settlement running alongside its return would finish last without the one-at-a-time fence.
    await new Promise((resolve) => (status === 'settled' ? setTimeout(resolve, 5) : setImmediate(resolve)))
    run.applied.set(transactionId, [...(run.applied.get(transactionId) ?? []), type])
    run.status.set(transactionId, status)
  }
  webhooks
    .on('transaction_settled', (e) => apply(e.data.transaction_id, e.event_type, 'settled'), { skipSuperseded: true })
    .on('transaction_returned', (e) => apply(e.data.transaction_id, e.event_type, 'returned'), {
      skipSuperseded: true,
    })
    .onError((error: WebhookError) => void run.unexpected.push(`${error.code}: ${error.message}`))
  served.use(webhooksListener(webhooks))

  for (let i = 0; i < TRANSACTIONS; i++) {
    const transaction_id = `txn_order_${i}`
    const settledAt = new Date(START - 3 * DAY + i * 60_000).toISOString()
    const returnedAt = new Date(START - DAY + i * 60_000).toISOString()
    // Not awaited one by one: the sends of a transaction's two events overlap as chaos delays them.
    await Promise.all([
      sandbox.emit('transaction_settled', { transaction_id, settlement_date: settledAt }),
      sandbox.emit('transaction_returned', { transaction_id, settlement_date: returnedAt }),
    ])
  }
  await sandbox.advance(80 * HOUR)
  await sandbox.idle()
  for (const entry of sandbox.log()) {
    for (const delivery of entry.deliveries) {
      expect(delivery.state).toBe('delivered')
      run.sends += delivery.attempts.length
      run.duplicates += delivery.attempts.filter((a) => a.kind === 'duplicate').length
      run.inProgress += delivery.attempts.filter((a) => a.status === 409).length
    }
  }
  return run
}

/** Transactions whose returned event was handled before their settled one: the reorders the receiver saw. */
const reordered = (run: Run) =>
  [...run.applied.values()].filter((types) => types.indexOf('transaction_returned') === 0).length

describe('ordering fences under sandbox chaos', () => {
  it('ends every transaction returned, whatever order settled and returned arrive in', {
    timeout: 120_000,
  }, async () => {
    const naive = await chaosRun(false)
    const fenced = await chaosRun(true)
    const wrong = (run: Run) => [...run.status].filter(([, status]) => status !== 'returned').length

    // Without fences the chaos makes late settlements overwrite returns: the test has teeth.
    expect(naive.status.size).toBe(TRANSACTIONS)
    expect(wrong(naive)).toBeGreaterThan(0)

    expect(fenced.unexpected).toEqual([])
    expect(fenced.status.size).toBe(TRANSACTIONS)
    expect(wrong(fenced)).toBe(0)
    // Superseded settlements were skipped: a returned-first transaction never applied its settlement.
    expect(reordered(fenced)).toBeGreaterThan(0)
    for (const types of fenced.applied.values()) {
      expect(types.at(-1)).toBe('transaction_returned')
      expect(types.filter((t) => t === 'transaction_returned')).toHaveLength(1)
    }
    console.info(
      `[ordering chaos, memoryStore] ${TRANSACTIONS * 2} events, ${fenced.sends} sends (${fenced.duplicates} duplicates, ${fenced.inProgress} answered in_progress); returned handled first: ${reordered(fenced)} of ${TRANSACTIONS}; final states right: ${TRANSACTIONS - wrong(fenced)}/${TRANSACTIONS} with fences, ${TRANSACTIONS - wrong(naive)}/${TRANSACTIONS} without`,
    )
  })
  // The shared stores, each fenced run on its real backing; Postgres through the handlers' transaction path.
  const shared: [string, () => WebhookStore][] = [
    [
      'redisStore',
      () => {
        const client = new Redis(REDIS_URL)
        closers.push(async () => void client.disconnect())
        return redisStore(client, { keyPrefix: `ordering-chaos:${randomUUID()}:`, ...UNHURRIED })
      },
    ],
    [
      'postgresStore',
      () => {
        const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 })
        const table = `ordering_chaos_${randomUUID().replaceAll('-', '').slice(0, 12)}`
        closers.push(async () => {
          await pool.query(`DROP TABLE IF EXISTS ${table}, ${table}_fences`)
          await pool.end()
        })
        return postgresStore(pool, { table })
      },
    ],
  ]
  for (const [name, makeStore] of shared) {
    it(`ends every transaction returned on ${name} too`, { timeout: 120_000 }, async () => {
      const fenced = await chaosRun(true, makeStore())
      const right = [...fenced.status.values()].filter((status) => status === 'returned').length
      expect(fenced.unexpected).toEqual([])
      expect(fenced.status.size).toBe(TRANSACTIONS)
      expect(right).toBe(TRANSACTIONS)
      expect(reordered(fenced)).toBeGreaterThan(0)
      console.info(
        `[ordering chaos, ${name}] ${TRANSACTIONS * 2} events, ${fenced.sends} sends (${fenced.duplicates} duplicates, ${fenced.inProgress} answered in_progress); returned handled first: ${reordered(fenced)} of ${TRANSACTIONS}; final states right: ${right}/${TRANSACTIONS}`,
      )
    })
  }
})
