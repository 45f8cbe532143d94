// The journal tells the truth about incidents (issue 47): answers given while the journal refused writes are
// written once it takes them; a full buffer drops the oldest copies first and says what it dropped; copies of one
// delivery cannot fill it; work settled after the deadline and replayed letters count as handled; a journal whose
// init failed recovers; a journal that never answers cannot hang reads or close().
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { memoryDeadLetterStore } from '../dead-letters/memory.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import { gate, recorder as logRecorder } from '../test-helpers/index.js'
import { memoryJournal } from './memory.js'
import { FLUSH_WAIT_MS, JournalRecorder, MAX_BUFFERED } from './recorder.js'
import type { Journal, JournalRecord } from './types.js'
import { eventsView, READ_TIMEOUT_MS } from './view.js'

const SECRET = 'whsec_journal_recorder'
const quiet = { error() {}, warn() {}, info() {} }

async function signed(event: object) {
  const { body, headers } = await signedDelivery(event, SECRET)
  return { method: 'POST', body, getHeader: (name: string) => headers[name as keyof typeof headers] }
}

/** A memory journal behind a switch: while `down`, its writes are refused, as Redis refuses them when full. */
function switched(inner = memoryJournal()) {
  const state = { down: true }
  const journal: Journal = {
    ...inner,
    write: (records) =>
      state.down
        ? Promise.reject(new Error('OOM command not allowed when used memory > maxmemory'))
        : inner.write(records),
  }
  return { journal, inner, state }
}

afterEach(() => {
  vi.useRealTimers()
})

describe('the journal through an incident', () => {
  it('writes the answers given while it refused writes once it takes them: the first run and its instance, the double run visible', async () => {
    const { journal, inner, state } = switched()
    const receiver = (instance: string) => {
      // Each with a store of its own: the second runs the event again, as after a lost done marker.
      const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), journal, instance, logger: quiet })
      webhooks.on('transaction_settled', () => {})
      return webhooks
    }
    const one = receiver('web-1')
    const two = receiver('web-2')
    const event = sampleEvent('transaction_settled')
    expect((await one.receive(await signed(event))).status).toBe(200)
    await one.events.flush()
    expect(await inner.answers(event.event_id as string)).toEqual([])
    state.down = false
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect((await two.receive(await signed(event))).status).toBe(200)
    await two.events.flush()
    // web-1 tries again on its own (after 1 s), nobody asking.
    await vi.waitFor(async () => expect(await inner.answers(event.event_id as string)).toHaveLength(2), {
      timeout: 10_000,
      interval: 100,
    })
    const timeline = await two.events.get(event.event_id as string)
    expect(timeline?.answers.map((a) => [a.outcome, a.instance])).toEqual([
      ['processed', 'web-1'],
      ['processed', 'web-2'],
    ])
    expect(timeline?.handledAt).toEqual(timeline?.answers[0]?.at)
    await Promise.all([one.close(), two.close()])
  })

  it('a full buffer drops the oldest copies first, and the timeline, the gap and the log say what was dropped', async () => {
    const { journal, inner, state } = switched()
    const log = logRecorder()
    const recorder = new JournalRecorder(journal, 'web-1', { ...log.logger, info() {} } as never)
    const answer = (eventId: string, outcome: string, status = 200) =>
      recorder.answered(
        {
          event: { event_id: eventId, event_type: 'transaction_settled' },
          error: undefined,
          verifiedWith: { index: 0 },
        },
        outcome,
        status,
        Date.now(),
      )
    for (let i = 0; i < 100; i++) answer(`evt_p${i}`, 'processed')
    await recorder.flush()
    expect(recorder.trouble().writeFailed).toBe(true)
    for (let i = 0; i < MAX_BUFFERED; i++) answer(`evt_d${i}`, 'duplicate')
    for (let i = 100; i < 110; i++) answer(`evt_p${i}`, 'processed')
    state.down = false
    await recorder.flush()
    const processed = await inner.list({ outcome: 'processed', limit: 1000 })
    expect(processed).toHaveLength(110)
    // A tenth of the buffer made room: the 1,001 oldest duplicates, no processed answer.
    expect(await inner.answers('evt_d0')).toMatchObject([{ outcome: 'journal_dropped', status: 0, copies: 1 }])
    expect(await inner.answers('evt_d1001')).toMatchObject([{ outcome: 'duplicate', status: 200 }])
    const [gap] = await inner.list({ outcome: 'journal_gap', limit: 10 })
    expect(gap).toMatchObject({ eventId: '', instance: 'web-1', copies: 1001 })
    const timeline = await eventsView(recorder).get('evt_d0')
    expect(timeline?.handledAt).toBeNull()
    expect(timeline?.answers.map((a) => [a.outcome, a.copies])).toEqual([['journal_dropped', 1]])
    expect(timeline?.gaps).toEqual([
      { from: new Date(gap?.at as number), to: expect.any(Date), instance: 'web-1', dropped: 1001 },
    ])
    expect(log.calls.map((call) => call.fields)).toContainEqual(
      expect.objectContaining({ code: 'journal_dropped', dropped: 1001 }),
    )
  })

  it('20,000 replays of one captured delivery keep memoryJournal to a few records; a real event keeps its answers', async () => {
    const journal = memoryJournal({ maxRecords: 10_000 })
    const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), journal, instance: 'web-1', logger: quiet })
    let fail = true
    webhooks.on('transaction_settled', () => {
      if (fail) throw new Error('ledger down')
    })
    const real = sampleEvent('transaction_settled')
    expect((await webhooks.receive(await signed(real))).status).toBe(500)
    fail = false
    expect((await webhooks.receive(await signed(real))).status).toBe(200)
    const captured = await signed(sampleEvent('transaction_settled'))
    for (let i = 0; i <= 20_000; i++) webhooks.receive(captured)
    await webhooks.events.flush()
    const kept = await journal.list({ limit: 1000 })
    // 2 answers of the real event, the first run, 3 copies and a count per minute (one more if a minute turned).
    expect(kept.length).toBeLessThanOrEqual(2 + 1 + 2 * 4)
    expect((await webhooks.events.get(real.event_id as string))?.answers.map((a) => a.outcome)).toEqual([
      'handler_failed',
      'processed',
    ])
    const copies = await webhooks.events.get(JSON.parse(captured.body).event_id)
    expect(copies?.answers.reduce((sum, a) => sum + a.copies, 0)).toBe(20_001)
    expect((await webhooks.events.counts({ minutes: 5 })).total).toEqual({
      handler_failed: 1,
      processed: 2,
      duplicate: 20_000,
    })
    await webhooks.close()
  })
})

describe('handled, whenever and wherever it was', () => {
  it('work settled after the deadline is journaled: handledAt is when its handlers succeeded', async () => {
    const journal = memoryJournal()
    const webhooks = createWebhooks({ secret: SECRET, journal, deadlineMs: 100, logger: quiet, checkAtStart: false })
    const held = gate()
    const ran = gate()
    webhooks.on('transaction_settled', async () => {
      await held.promise
      ran.open()
    })
    const event = sampleEvent('transaction_settled')
    const delivery = await signed(event)
    expect((await webhooks.receive(delivery)).status).toBe(503)
    held.open()
    await ran.promise
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect((await webhooks.receive(delivery)).status).toBe(200)
    const timeline = await webhooks.events.get(event.event_id as string)
    expect(timeline?.answers.map((a) => [a.status, a.outcome])).toEqual([
      [503, 'deadline_exceeded'],
      [0, 'processed_late'],
      [200, 'duplicate'],
    ])
    expect(timeline?.handledAt).toEqual(timeline?.answers[1]?.at)
    expect(timeline?.createdAtDate).toEqual(new Date(event.created_at as string))
    await webhooks.close()
  })

  it('a dead letter replayed from the console is journaled: handledAt is the replay', async () => {
    const deadLetters = memoryDeadLetterStore()
    const journal = memoryJournal()
    const webhooks = createWebhooks({ secret: SECRET, journal, deadLetters, instance: 'board', logger: quiet })
    webhooks.on('transaction_settled', () => {})
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, SECRET)
    await deadLetters.park({
      eventId: event.event_id as string,
      eventType: 'transaction_settled',
      body: new TextEncoder().encode(body),
      headers,
      code: 'handler_failed',
      reason: 'ledger down',
      createdAt: undefined,
      parkedAt: new Date(),
    })
    expect(await webhooks.deadLetters.replay(event.event_id as string)).toMatchObject({ status: 'processed' })
    const timeline = await webhooks.events.get(event.event_id as string)
    expect(timeline?.answers.map((a) => [a.status, a.outcome, a.instance])).toEqual([[0, 'replay_processed', 'board']])
    expect(timeline?.handledAt).toEqual(timeline?.answers[0]?.at)
    await webhooks.close()
  })
})

describe('a journal that fails to start or never answers', () => {
  it('an init that failed is tried again, and the answers of the meantime are written', async () => {
    const inner = memoryJournal()
    let down = true
    const journal: Journal = {
      ...inner,
      init: () => (down ? Promise.reject(new Error('ECONNREFUSED 127.0.0.1:5432')) : Promise.resolve()),
    }
    const webhooks = createWebhooks({ secret: SECRET, journal, logger: quiet, checkAtStart: false })
    webhooks.on('transaction_settled', () => {})
    const events = Array.from({ length: 6 }, () => sampleEvent('transaction_settled'))
    for (const event of events) expect((await webhooks.receive(await signed(event))).status).toBe(200)
    await webhooks.events.flush()
    await expect(webhooks.events.get(events[0]?.event_id as string)).rejects.toThrow('ECONNREFUSED')
    down = false
    await vi.waitFor(async () => expect(await inner.list({ limit: 10 })).toHaveLength(6), {
      timeout: 10_000,
      interval: 100,
    })
    expect((await webhooks.events.get(events[5]?.event_id as string))?.handledAt).toBeInstanceOf(Date)
    await webhooks.close()
  })

  it('a write that never settles holds reads for at most 3 s, and close() too', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const journal: Journal = { ...memoryJournal(), write: () => new Promise(() => {}) }
    const log = logRecorder()
    const webhooks = createWebhooks({ secret: SECRET, journal, logger: log.logger, checkAtStart: false })
    webhooks.on('transaction_settled', () => {})
    const event = sampleEvent('transaction_settled')
    expect((await webhooks.receive(await signed(event))).status).toBe(200)
    const settled = async <T>(work: Promise<T>): Promise<T | 'pending'> => {
      await vi.advanceTimersByTimeAsync(FLUSH_WAIT_MS)
      await new Promise((resolve) => setImmediate(resolve))
      return Promise.race([work, Promise.resolve('pending' as const)])
    }
    expect(await settled(webhooks.events.get(event.event_id as string))).toBeUndefined()
    expect(await settled(webhooks.events.list())).toEqual({ answers: [] })
    expect(await settled(webhooks.close())).toBeUndefined()
    expect(log.calls.map((call) => call.fields)).toContainEqual({ code: 'journal_write_failed', lost: 1 })
  })

  it('a read the journal never answers rejects after 10 s', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    const journal: Journal = { ...memoryJournal(), answers: () => new Promise<JournalRecord[]>(() => {}) }
    const webhooks = createWebhooks({ secret: SECRET, journal, logger: quiet, checkAtStart: false })
    const read = webhooks.events.get('evt_1')
    const checked = expect(read).rejects.toThrow('events.get: the journal did not answer within 10000 ms')
    await vi.advanceTimersByTimeAsync(FLUSH_WAIT_MS + READ_TIMEOUT_MS)
    await checked
    await webhooks.close()
  })
})
