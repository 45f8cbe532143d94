// The outage of issue 20, end to end: the ledger is down for the service's whole 72 hours of retries, then fixed,
// and the merchant has the event sent again with PUT /ps/webhook/manually_resend_webhooks through
// @payhooks/client, 75 hours after it was signed. The event must end handled once (or parked, then replayed
// once), never acknowledged unhandled, with the memory store and with PostgreSQL.
//
// The sandbox stamps created_at with the wall clock and its manual clock drives the retries; the receiver ages
// events by the wall clock too. So both move together here: Date is faked (timers stay real) and set one hour on
// before each hour the sandbox plays.
import { randomUUID } from 'node:crypto'
import { createClient } from '@payhooks/client'
import {
  createWebhooks,
  type DeadLetterStore,
  memoryStore,
  StaleEventError,
  type WebhookError,
  type WebhookStore,
} from '@payhooks/core'
import { postgresDeadLetterStore, postgresStore } from '@payhooks/postgres'
import { createSandbox, type Sandbox, type SandboxAttempt } from '@payhooks/sandbox'
import pg from 'pg'
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { databaseUrl } from '../fixtures/postgres.js'
import { serveWebhooks } from '../fixtures/sandbox-receivers.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const RESELLER_KEY = '1001|outage-test-key'
const MERCHANT = 1234

const admin = new pg.Pool({ connectionString: databaseUrl(), max: 2 })
const pools: pg.Pool[] = []
const tables: string[] = []
const cleanup: (() => Promise<void>)[] = []

function table(prefix: string) {
  const name = `${prefix}_${randomUUID().replaceAll('-', '').slice(0, 12)}`
  tables.push(name)
  return name
}

function pool() {
  const made = new pg.Pool({ connectionString: databaseUrl(), max: 4 })
  pools.push(made)
  return made
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
})

afterEach(async () => {
  vi.useRealTimers()
  for (const close of cleanup.splice(0).reverse()) await close()
})

afterAll(async () => {
  for (const name of tables) await admin.query(`DROP TABLE IF EXISTS ${name}`)
  await Promise.all([...pools, admin].map((p) => p.end()))
})

interface Setup {
  store: WebhookStore<object>
  deadLetters?: DeadLetterStore
  /** Writes the handled event to the ledger; throws while it is down. */
  handle(eventId: string, context: object): Promise<void>
  /** How many times the ledger holds the event. */
  ledgerRows(eventId: string): Promise<number>
}

interface Outage {
  sandbox: Sandbox
  eventId: string
  webhooks: ReturnType<typeof createWebhooks>
  errors: WebhookError[]
  attempts(): SandboxAttempt[]
  resend(): Promise<SandboxAttempt>
  ledgerUp(): void
}

/**
 * A manual-clock sandbox and a receiver on `setup`'s stores, the ledger down: the event is emitted and every
 * retry of the 72 hours played, one hour at a time, then 3 hours more pass; the ledger is then fixed.
 */
async function outage(setup: Setup): Promise<Outage> {
  const sandbox = createSandbox({ clock: 'manual', resellers: [{ key: RESELLER_KEY, merchantIds: [MERCHANT] }] })
  cleanup.push(() => sandbox.close())
  const { url: baseUrl } = await sandbox.listen()
  const client = createClient({ baseUrl, auth: { resellerKey: RESELLER_KEY } }).forMerchant(MERCHANT)

  let down = true
  const errors: WebhookError[] = []
  let secret = ''
  const webhooks = createWebhooks({
    secret: () => secret,
    store: setup.store,
    deadLetters: setup.deadLetters,
    logger: { error() {}, warn() {} },
  })
  webhooks.onError((error) => errors.push(error))
  webhooks.on('transaction_settled', async (event, context) => {
    if (down) throw new Error('ledger unavailable')
    await setup.handle(event.event_id, context)
  })
  const receiver = await serveWebhooks(webhooks)
  cleanup.push(async () => {
    await receiver.close()
    await webhooks.close()
  })

  const subscription = await client.subscriptions.create({
    url: receiver.url,
    event_types: ['transaction_settled'],
    is_active: true,
  })
  secret = subscription.signature_secret
  const { eventId } = await sandbox.emit('transaction_settled', undefined, { merchantId: MERCHANT })
  const hour = async () => {
    vi.setSystemTime(Date.now() + HOUR)
    await sandbox.advance(HOUR)
  }
  for (let elapsed = 0; elapsed < 75; elapsed++) await hour()

  const attempts = () => sandbox.deliveries(eventId)[0]?.attempts ?? []
  return {
    sandbox,
    eventId,
    webhooks,
    errors,
    attempts,
    async resend() {
      await client.webhooks.resend([eventId])
      return attempts().at(-1) as SandboxAttempt
    },
    ledgerUp() {
      down = false
    },
  }
}

const answer = (attempt: SandboxAttempt | undefined) => [attempt?.kind, attempt?.status, attempt?.response]
const processed = (eventId: string) => `{"ok":true,"event_id":"${eventId}","status":"processed"}`
const duplicate = (eventId: string) => `{"ok":true,"event_id":"${eventId}","status":"duplicate"}`
const parked = (eventId: string) => `{"ok":true,"event_id":"${eventId}","status":"parked"}`
const STALE =
  '{"error":"stale_event","message":"event older than this receiver accepts and not handled before; not acknowledged"}'
const FAILED = '{"error":"handler_failed","message":"a handler failed; retry later"}'

/** A ledger in memory, for the memory store. */
function memoryLedger(store: WebhookStore<object>, deadLetters?: DeadLetterStore): Setup {
  const rows: string[] = []
  return {
    store,
    deadLetters,
    async handle(eventId) {
      rows.push(eventId)
    },
    ledgerRows: async (eventId) => rows.filter((id) => id === eventId).length,
  }
}

/** A ledger table written through the store's transaction (context.db), committed with the done marker. */
async function postgresLedger(options: { retentionMs?: number; deadLetters: boolean }): Promise<Setup> {
  const ledger = table('outage_ledger')
  await admin.query(`CREATE TABLE ${ledger} (event_id text NOT NULL)`)
  const shared = pool()
  return {
    store: postgresStore(shared, { table: table('outage_events'), retentionMs: options.retentionMs }),
    deadLetters: options.deadLetters
      ? postgresDeadLetterStore(shared, { table: table('outage_letters'), sweepIntervalMs: 0 })
      : undefined,
    async handle(eventId, context) {
      await (context as { db: pg.PoolClient }).db.query(`INSERT INTO ${ledger} (event_id) VALUES ($1)`, [eventId])
    },
    async ledgerRows(eventId) {
      const { rows } = await admin.query(`SELECT count(*)::int AS n FROM ${ledger} WHERE event_id = $1`, [eventId])
      return rows[0].n as number
    },
  }
}

describe('a 73-hour outage, then a manual resend 75 hours after the event was signed', () => {
  it.each([
    ['the memory store', () => memoryLedger(memoryStore())],
    ['PostgreSQL', () => postgresLedger({ deadLetters: false })],
  ])(
    'with %s and no dead-letter store: every retry 500, the resend 422 stale_event, never acknowledged',
    async (_, make) => {
      const setup = await make()
      const run = await outage(setup)
      expect(run.attempts().map(answer)).toEqual(Array.from({ length: 73 }, () => ['scheduled', 500, FAILED]))
      expect(run.sandbox.deliveries(run.eventId)[0]?.state).toBe('failed')
      run.ledgerUp()

      const resent = await run.resend()
      expect(answer(resent)).toEqual(['resend', 422, STALE])
      expect(resent.hint).toMatch(/^stale_event: .* did not acknowledge it/)
      expect(await setup.ledgerRows(run.eventId)).toBe(0)
      const stale = run.errors.at(-1) as StaleEventError
      expect(stale).toBeInstanceOf(StaleEventError)
      expect(stale.ageMs).toBeGreaterThanOrEqual(75 * HOUR)
    },
  )

  it.each([
    ['the memory store kept 7 days', () => memoryLedger(memoryStore({ retentionMs: 7 * DAY }))],
    ['PostgreSQL kept 7 days', () => postgresLedger({ retentionMs: 7 * DAY, deadLetters: false })],
  ])('with %s: the resend runs the handler once, a second resend is a duplicate', async (_, make) => {
    const setup = await make()
    const run = await outage(setup)
    expect(run.attempts().filter((a) => a.status === 500)).toHaveLength(73)
    run.ledgerUp()

    expect(answer(await run.resend())).toEqual(['resend', 200, processed(run.eventId)])
    expect(answer(await run.resend())).toEqual(['resend', 200, duplicate(run.eventId)])
    expect(await setup.ledgerRows(run.eventId)).toBe(1)
    expect(run.sandbox.deliveries(run.eventId)[0]?.state).toBe('delivered')
  })

  it('with PostgreSQL and its dead-letter store: parked on the last try and again on the resend, replayed once', async () => {
    const setup = await postgresLedger({ deadLetters: true })
    const run = await outage(setup)
    // The 73rd attempt (72 h after the event was signed) is on the last tries: parked, answered 200.
    expect(run.attempts().map(answer)).toEqual([
      ...Array.from({ length: 72 }, () => ['scheduled', 500, FAILED]),
      ['scheduled', 200, parked(run.eventId)],
    ])
    expect((await run.webhooks.deadLetters.get(run.eventId))?.code).toBe('handler_failed')
    run.ledgerUp()

    // The merchant resends it anyway: too old to run on its own word, and not known as handled, so parked again.
    expect(answer(await run.resend())).toEqual(['resend', 200, parked(run.eventId)])
    expect(await run.webhooks.deadLetters.get(run.eventId)).toMatchObject({
      code: 'stale_event',
      parkCount: 2,
      status: 'parked',
    })
    expect(await setup.ledgerRows(run.eventId)).toBe(0)

    expect(await run.webhooks.replay(run.eventId)).toEqual({ eventId: run.eventId, status: 'processed' })
    // The second replay says when the first handled it (the letter's replayedAt).
    expect(await run.webhooks.replay(run.eventId)).toEqual({
      eventId: run.eventId,
      status: 'duplicate',
      handledAt: expect.any(Date),
    })
    expect(answer(await run.resend())).toEqual(['resend', 200, duplicate(run.eventId)])
    expect(await setup.ledgerRows(run.eventId)).toBe(1)
  })
})
