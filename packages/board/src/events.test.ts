// The Events page's API (the journal through webhooks.events) and the overview's fleet panel.
import { createWebhooks, memoryDeadLetterStore, memoryJournal, memoryStore } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { createBoard } from './board.js'
import { json, park, request, SECRET, setUp } from './test-helpers.js'

async function journaled() {
  const deadLetters = memoryDeadLetterStore()
  const journal = memoryJournal()
  const webhooks = createWebhooks({
    secret: [{ secret: SECRET, label: 'sub_live' }],
    store: memoryStore(),
    deadLetters,
    journal,
    instance: 'web-1',
    logger: { error() {} },
  })
  let fail = true
  webhooks.on('transaction_settled', () => {
    if (fail) throw new Error('ledger down')
  })
  webhooks.onAny(() => {})
  const deliver = async (event: object) => {
    const { body, headers } = await signedDelivery(event, SECRET)
    return (await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })).status
  }
  const settled = sampleEvent('transaction_settled')
  const returned = sampleEvent('transaction_returned')
  expect(await deliver(settled)).toBe(500)
  fail = false
  expect(await deliver(settled)).toBe(200)
  expect(await deliver(settled)).toBe(200)
  expect(await deliver(returned)).toBe(200)
  const board = createBoard<{ user: string }>({ webhooks, authorize: (r) => r.user === 'ops', logger: { warn() {} } })
  return { webhooks, board, deadLetters, journal, settled: settled.event_id as string, returned }
}

const get = async (board: ReturnType<typeof createBoard<{ user: string }>>, path: string, query = '') =>
  board.handle(request({ path, query }))

describe('the Events API', () => {
  it('without a journal: says it is off, and the overview has no fleet panel', async () => {
    const { board } = await setUp()
    expect(json(await get(board, '/api/events'))).toEqual({ enabled: false })
    expect(json(await get(board, '/api/events/evt_1'))).toEqual({ enabled: false })
    expect(json(await get(board, '/api/overview')).journal).toBeNull()
    expect(json(await get(board, '/api/session')).journal).toBe(false)
  })

  it("an event's timeline: every answer in order with instance, duration and secret; unknown ids say so", async () => {
    const { board, deadLetters, settled } = await journaled()
    expect(json(await get(board, '/api/session')).journal).toBe(true)
    const answer = json(await get(board, `/api/events/${encodeURIComponent(settled)}`))
    expect(answer).toMatchObject({ enabled: true, retentionHours: 168, eventId: settled, deadLetter: null })
    expect(answer.timeline.eventType).toBe('transaction_settled')
    expect(answer.timeline.handledAt).toMatch(/^\d{4}-/)
    expect(
      answer.timeline.answers.map((a: Record<string, unknown>) => [a.status, a.outcome, a.instance, a.verifiedWith]),
    ).toEqual([
      [500, 'handler_failed', 'web-1', { index: 0, label: 'sub_live' }],
      [200, 'processed', 'web-1', { index: 0, label: 'sub_live' }],
      [200, 'duplicate', 'web-1', { index: 0, label: 'sub_live' }],
    ])
    expect(answer.timeline.answers.every((a: { durationMs: number }) => Number.isInteger(a.durationMs))).toBe(true)
    await park(deadLetters, settled)
    expect(json(await get(board, `/api/events/${settled}`)).deadLetter).toMatchObject({
      status: 'parked',
      code: 'handler_failed',
    })
    expect(json(await get(board, '/api/events/evt_never'))).toMatchObject({
      enabled: true,
      eventId: 'evt_never',
      timeline: null,
      retentionHours: 168,
    })
    expect((await get(board, '/api/events/%E0%A4%A')).status).toBe(400)
    expect((await board.handle(request({ path: '/api/events', user: 'mallory' }))).status).toBe(403)
  })

  it('says where answers were dropped: gaps on the page of an id without answers and on a timeline; copies counted', async () => {
    const { board, journal, settled } = await journaled()
    const at = Date.now() - 30_000
    const base = { eventType: 'transaction_settled', createdAt: null, status: 0, instance: 'web-2', secretIndex: 0 }
    await journal.write([
      { ...base, id: 'gap1', at, eventId: '', eventType: '', outcome: 'journal_gap', durationMs: 20_000, copies: 40 },
      { ...base, id: 'lost1', at: at + 5, eventId: 'evt_lost', outcome: 'journal_dropped', durationMs: 0, copies: 2 },
      {
        ...base,
        id: 'dup1',
        at: at + 6,
        eventId: settled,
        status: 200,
        outcome: 'duplicate',
        durationMs: 1,
        copies: 9,
      },
    ])
    const gap = {
      from: new Date(at).toISOString(),
      to: new Date(at + 20_000).toISOString(),
      instance: 'web-2',
      dropped: 40,
    }
    const missing = json(await get(board, '/api/events/evt_never'))
    expect(missing).toMatchObject({ timeline: null, gaps: [gap] })
    const lost = json(await get(board, '/api/events/evt_lost'))
    expect(lost.timeline.handledAt).toBeNull()
    expect(lost.timeline.answers).toMatchObject([{ status: 0, outcome: 'journal_dropped', copies: 2 }])
    expect(lost.gaps).toEqual([gap])
    const counted = json(await get(board, `/api/events/${settled}`)).timeline.answers
    expect(counted.map((a: { outcome: string; copies: number }) => [a.outcome, a.copies])).toContainEqual([
      'duplicate',
      9,
    ])
    const { journal: fleet } = json(await get(board, '/api/overview'))
    expect(fleet.last15).toMatchObject({ duplicate: 10, journal_gap: 40 })
    // Accounts are listed by outcome, not counted as answers per minute.
    expect(fleet.perMinute.reduce((sum: number, n: number) => sum + n, 0)).toBe(4 + 9)
  })

  it('a dead-letter store that cannot answer leaves the timeline showing', async () => {
    const { webhooks, settled } = await journaled()
    const down = Object.assign(Object.create(webhooks), {
      deadLetters: { ...webhooks.deadLetters, get: () => Promise.reject(new Error('redis://:pw@10.0.0.9 down')) },
    })
    const answer = await createBoard({ webhooks: down, authorize: () => true }).handle(
      request({ path: `/api/events/${settled}` }),
    )
    expect(json(answer).deadLetter).toEqual({ unavailable: true })
    expect(json(answer).timeline.answers).toHaveLength(3)
    expect(String(answer.body)).not.toContain('pw@')
  })

  it('lists answers newest first, filtered by outcome, type and time, keyset-paged by the cursor', async () => {
    const { board, settled, returned } = await journaled()
    const first = json(await get(board, '/api/events', 'limit=2'))
    expect(first.answers.map((a: { outcome: string }) => a.outcome)).toEqual(['processed', 'duplicate'])
    expect(first.answers[0].eventId).toBe(returned.event_id)
    const next = json(await get(board, '/api/events', `limit=2&cursor=${first.cursor}`))
    expect(next.answers.map((a: { outcome: string }) => a.outcome)).toEqual(['processed', 'handler_failed'])
    const failures = json(await get(board, '/api/events', 'outcome=handler_failed'))
    expect(failures.answers.map((a: { eventId: string }) => a.eventId)).toEqual([settled])
    expect(failures.cursor).toBeNull()
    const typed = json(await get(board, '/api/events', 'eventType=transaction_returned'))
    expect(typed.answers).toHaveLength(1)
    const future = new Date(Date.now() + 60_000).toISOString()
    expect(json(await get(board, '/api/events', `from=${future}`)).answers).toEqual([])
    expect(json(await get(board, '/api/events', `to=${future}`)).answers).toHaveLength(4)
    for (const query of ['cursor=nope', 'from=soon', 'limit=0', 'limit=201']) {
      const refused = await get(board, '/api/events', query)
      expect(refused.status).toBe(400)
    }
  })

  it("the overview's fleet panel: answers by outcome over 15 and 60 minutes, from the journal", async () => {
    const { board } = await journaled()
    const { journal } = json(await get(board, '/api/overview'))
    expect(journal.last15).toEqual({ handler_failed: 1, processed: 2, duplicate: 1 })
    expect(journal.last60).toEqual(journal.last15)
    expect(journal.perMinute).toHaveLength(60)
    expect(journal.perMinute.at(-1)).toBeGreaterThanOrEqual(1)
  })

  it('gathers the fleet panel on its own: a failing or hanging journal shows on that panel only', async () => {
    const { webhooks } = await journaled()
    const withEvents = (counts: () => Promise<never>) =>
      Object.assign(Object.create(webhooks), { events: { ...webhooks.events, counts } })
    const failing = json(
      await createBoard({
        webhooks: withEvents(() => Promise.reject(new Error('ECONNREFUSED'))),
        authorize: () => true,
      }).handle(request({ path: '/api/overview' })),
    )
    expect(failing.failed).toEqual({ journal: 'could not be gathered' })
    expect(failing.deadLetters).toMatchObject({ parked: 0 })
    expect(failing.instance).not.toBeNull()
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const pending = createBoard({ webhooks: withEvents(() => new Promise(() => {})), authorize: () => true }).handle(
        request({ path: '/api/overview' }),
      )
      await vi.advanceTimersByTimeAsync(2_000)
      const late = json(await pending)
      expect(late.failed).toEqual({ journal: 'no answer within 2000 ms' })
      expect(late.health).not.toBeNull()
    } finally {
      vi.useRealTimers()
    }
  })
})
