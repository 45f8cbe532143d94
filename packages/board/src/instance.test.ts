// The receiver's own figures on the board: stats() on the overview, the secrets page's verifications, the held
// ordering keys; each with a note when the receiver (or its store) has none.
import { createWebhooks, memoryDeadLetterStore, memoryStore, type Webhooks } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createBoard } from './board.js'
import { json, request, SECRET } from './test-helpers.js'
import type { BoardWebhooks } from './types.js'

const OLD = 'whsec_board_old'

async function deliver(webhooks: Pick<Webhooks<never>, 'receive'>, id: string, key = SECRET, createdAt?: string) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId: id, createdAt }), key)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

function receiver() {
  const webhooks = createWebhooks({
    secret: [
      { secret: SECRET, label: 'sub_2026_q4' },
      { secret: OLD, label: '<b>old</b>' },
    ],
    store: memoryStore(),
    deadLetters: memoryDeadLetterStore(),
    checkAtStart: false,
  })
  webhooks.onError(() => {})
  webhooks.on('transaction_settled', (event) => {
    if (event.event_id.startsWith('evt_fail')) throw new Error('ledger down')
  })
  const board = createBoard({ webhooks, authorize: () => true })
  return { webhooks, board }
}

const get = async (board: ReturnType<typeof createBoard>, path: string, query = '') => {
  const answer = await board.handle(request({ path, query }))
  return { status: answer.status, json: json(answer) }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('the board and stats()', () => {
  it("shows this instance's hour on the overview: outcomes, latency, gauges, conflicts, the oldest retried", async () => {
    const { webhooks, board } = receiver()
    await deliver(webhooks, 'evt_ok_1')
    // Other bytes (fresh ids in its data): a duplicate, and a conflict.
    await deliver(webhooks, 'evt_ok_1')
    // An hour old: inside the service's 72-hour retry window whatever the day the test runs.
    const createdAt = `${new Date(Date.now() - 3_600_000).toISOString().slice(0, 19)}Z`
    expect((await deliver(webhooks, 'evt_fail_1', SECRET, createdAt)).status).toBe(500)
    const { instance } = (await get(board, '/api/overview')).json
    expect(instance).toMatchObject({
      outcomes: { processed: 1, duplicate: 1, handler_failed: 1 },
      latency: { count: 3 },
      inFlight: 0,
      waiting: 0,
      conflicts: 1,
      retrying: {
        count: 1,
        oldest: { eventId: 'evt_fail_1', createdAt, attempts: 1, lastStatus: 500 },
      },
    })
    expect(instance.latency.p99Ms).toBeGreaterThanOrEqual(instance.latency.p50Ms)
    expect(instance.perMinute).toHaveLength(60)
    expect(instance.perMinute.at(-1)).toBe(3)
    expect(Date.parse(instance.since)).not.toBeNaN()
    const stats = (await get(board, '/api/stats')).json
    expect(stats.deliveries.total).toEqual({ processed: 1, duplicate: 1, handler_failed: 1 })
    expect(stats.secrets.usage).toHaveLength(1)
  })

  it('shows runs overrunning deadlineMs and the event types quarantined, as soon as they are', async () => {
    const webhooks = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      checkAtStart: false,
      deadlineMs: 50,
      maxConcurrentEvents: 2,
    })
    webhooks.onError(() => {})
    let settle = () => {}
    const stuck = new Promise<void>((resolve) => {
      settle = resolve
    })
    webhooks.on('transaction_settled', () => stuck) // ignores its signal
    const board = createBoard({ webhooks, authorize: () => true })
    expect((await deliver(webhooks, 'evt_overrun')).status).toBe(503)
    await vi.waitFor(() => expect(webhooks.stats().quarantined).toHaveLength(1), { timeout: 10_000 })
    expect((await get(board, '/api/overview')).json.instance).toMatchObject({
      overrunning: { count: 1, oldest: { eventId: 'evt_overrun', eventType: 'transaction_settled' } },
      quarantined: [{ eventType: 'transaction_settled', overrunning: 1, slots: 1 }],
    })
    settle()
    await vi.waitFor(() => expect(webhooks.stats().quarantined).toEqual([]), { timeout: 10_000 })
    await webhooks.close()
  })

  it('lists verifications per secret per hour (72), with labels and when each was last used', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    vi.setSystemTime(Date.parse('2026-11-26T10:15:00Z'))
    const { webhooks, board } = receiver()
    await deliver(webhooks, 'evt_s_1', OLD)
    vi.setSystemTime(Date.parse('2026-11-26T13:20:00Z'))
    await deliver(webhooks, 'evt_s_2', SECRET)
    const { status, json: secrets } = await get(board, '/api/secrets')
    expect(status).toBe(200)
    expect(secrets).toMatchObject({
      supported: true,
      since: '2026-11-26T10:15:00.000Z',
      from: '2026-11-23T14:00:00.000Z',
    })
    expect(secrets.secrets).toEqual([
      {
        index: 0,
        label: 'sub_2026_q4',
        total: 1,
        perHour: [...Array(71).fill(0), 1],
        lastUsedAt: '2026-11-26T13:20:00.000Z',
      },
      {
        index: 1,
        label: '<b>old</b>',
        total: 1,
        perHour: [...Array(68).fill(0), 1, 0, 0, 0],
        lastUsedAt: '2026-11-26T10:15:00.000Z',
      },
    ])
    expect(JSON.stringify(secrets)).not.toContain(OLD)
  })

  it('says when the receiver has no stats() (an older core): the overview and secrets show a note', async () => {
    const { webhooks } = receiver()
    const older: BoardWebhooks = { deadLetters: webhooks.deadLetters }
    const board = createBoard({ webhooks: older, authorize: () => true })
    expect((await get(board, '/api/overview')).json.instance).toBeNull()
    expect((await get(board, '/api/secrets')).json).toEqual({ supported: false })
    expect((await get(board, '/api/stats')).json).toBeNull()
  })
})

describe('the board and held ordering keys', () => {
  const held = {
    key: 'merchant:42',
    eventId: 'evt_h_1',
    eventType: 'transaction_settled',
    since: new Date('2026-11-26T10:00:00Z'),
    expiresAt: new Date('2026-11-26T10:00:30Z'),
    token: 17,
  }

  function withHeldKeys(heldKeys: (options?: { limit?: number }) => Promise<(typeof held)[] | undefined>) {
    const { webhooks } = receiver()
    const calls: ({ limit?: number } | undefined)[] = []
    const board = createBoard({
      webhooks: Object.assign(Object.create(webhooks), {
        deadLetters: webhooks.deadLetters,
        heldKeys: (options?: { limit?: number }) => {
          calls.push(options)
          return heldKeys(options)
        },
      }),
      authorize: () => true,
    })
    return { board, calls }
  }

  it('lists them (key, event, since, expires), without the fencing token', async () => {
    const { board, calls } = withHeldKeys(async () => [held])
    const { json: answer } = await get(board, '/api/ordering-keys', 'limit=20')
    expect(answer).toMatchObject({ supported: true })
    expect(answer.keys).toEqual([
      {
        key: 'merchant:42',
        eventId: 'evt_h_1',
        eventType: 'transaction_settled',
        since: '2026-11-26T10:00:00.000Z',
        expiresAt: '2026-11-26T10:00:30.000Z',
      },
    ])
    expect(calls).toEqual([{ limit: 20 }])
    expect((await get(board, '/api/ordering-keys', 'limit=0')).status).toBe(400)
  })

  it("lists the key a running handler holds, from the receiver's own memoryStore, until it is done", async () => {
    const webhooks = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      checkAtStart: false,
      ordering: {
        transaction_settled: {
          key: (event: { data: { transaction_id: string } }) => event.data.transaction_id,
          at: (event: { data: { settlement_date: string } }) => event.data.settlement_date,
        },
      },
    })
    let finish = () => {}
    webhooks.on('transaction_settled', () => new Promise<void>((resolve) => (finish = resolve)))
    const board = createBoard({ webhooks, authorize: () => true })
    expect((await get(board, '/api/ordering-keys')).json).toMatchObject({ supported: true, keys: [] })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_held', data: { transaction_id: 'txn_<b>' } })
    const { body, headers } = await signedDelivery(JSON.stringify(event), SECRET)
    const answer = webhooks.receive({
      method: 'POST',
      body,
      getHeader: (name) => headers[name as keyof typeof headers],
    })
    await vi.waitFor(async () => expect((await get(board, '/api/ordering-keys')).json.keys).toHaveLength(1))
    const [held] = (await get(board, '/api/ordering-keys')).json.keys
    expect(held).toMatchObject({ key: 'txn_<b>', eventId: 'evt_held', eventType: 'transaction_settled' })
    expect(Object.keys(held)).toEqual(['key', 'eventId', 'eventType', 'since', 'expiresAt'])
    finish()
    expect((await answer).status).toBe(200)
    expect((await get(board, '/api/ordering-keys')).json.keys).toEqual([])
    await webhooks.close()
  })

  it('says so when the receiver or its store cannot list them', async () => {
    const { board } = withHeldKeys(async () => undefined)
    expect((await get(board, '/api/ordering-keys')).json).toEqual({ supported: false, keys: [] })
    const { webhooks } = receiver()
    const plain = createBoard({ webhooks: { deadLetters: webhooks.deadLetters }, authorize: () => true })
    expect((await get(plain, '/api/ordering-keys')).json).toEqual({ supported: false, keys: [] })
  })
})
