import { sampleEvent } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { memoryDeadLetterStore } from '../dead-letters/index.js'
import type { WebhookError } from '../errors/index.js'
import { memoryJournal } from '../journal/index.js'
import { createWebhooks } from '../receiver/create.js'
import { deliver, secret } from '../test-helpers/webhooks.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import { memoryPauseStore } from './memory.js'
import type { Pause, PauseStore } from './types.js'

function receiver(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const ran: string[] = []
  const webhooks = createWebhooks({ secret, ...options })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => void ran.push(event.event_id))
  return { webhooks, errors, ran }
}

describe('pause and resume (memory)', () => {
  it('parks a paused type as paused letters (200 parked), runs the others, and replays them once on resume', async () => {
    const deadLetters = { ...memoryDeadLetterStore(), durable: true }
    const pauses = memoryPauseStore()
    const a = receiver({ deadLetters, pauses, journal: memoryJournal() })
    const b = receiver({ deadLetters, pauses })

    const pause = await a.webhooks.pause('transaction_settled', { reason: 'ledger migration' })
    expect(pause).toMatchObject({ eventType: 'transaction_settled', reason: 'ledger migration' })

    const parked = await deliver(b.webhooks, sampleEvent('transaction_settled', { eventId: 'evt_p1' }))
    const again = await deliver(a.webhooks, sampleEvent('transaction_settled', { eventId: 'evt_p2' }))
    const other = await deliver(b.webhooks, sampleEvent('transaction_returned', { eventId: 'evt_r1' }))
    expect([parked.status, parked.json.status, again.status]).toEqual([200, 'parked', 200])
    expect(other.status).toBe(200)
    expect([...a.ran, ...b.ran]).toEqual(['evt_r1'])
    expect((await deadLetters.get('evt_p1'))?.code).toBe('paused')
    expect(b.webhooks.stats().paused.map((p) => p.eventType)).toEqual(['transaction_settled'])
    expect(b.webhooks.stats().deliveries.total.paused).toBe(1)
    const health = await b.webhooks.health()
    expect(health.ready).toBe(true)
    expect(health.checks.find((check) => check.name === 'paused')).toMatchObject({ ok: false, severity: 'warning' })
    // A pause is deliberate: no onError report for each delivery.
    expect([...a.errors, ...b.errors]).toEqual([])

    const { resumed, replay } = await a.webhooks.resume('transaction_settled')
    expect(resumed).toBe(true)
    expect(replay).toMatchObject({ tried: 2, processed: 2 })
    expect([...a.ran, ...b.ran].sort()).toEqual(['evt_p1', 'evt_p2', 'evt_r1'])
    expect(await b.webhooks.paused()).toEqual([])
    expect((await b.webhooks.health()).checks.find((check) => check.name === 'paused')).toBeUndefined()
    const timeline = await a.webhooks.events.get('evt_p2')
    expect(timeline?.answers.map((answer) => answer.outcome)).toEqual(['paused', 'replay_processed'])
  })

  it("answers 503 paused without dead letters, and the service's retry after resume runs it once", async () => {
    const { webhooks, ran } = receiver()
    await webhooks.pause('*', { reason: 'deploy' })
    const refused = await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_1' }))
    expect([refused.status, refused.json.error, refused.headers['retry-after']]).toEqual([503, 'paused', '60'])
    expect(refused.json.message).toBe('events of this type are paused by an operator; retry later')
    expect(ran).toEqual([])
    expect(await webhooks.resume('*')).toEqual({ resumed: true })
    expect((await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_1' }))).status).toBe(200)
    expect((await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_1' }))).json.status).toBe(
      'duplicate',
    )
    expect(ran).toEqual(['evt_1'])
  })

  it('keeps a type paused by its own pause when every type is resumed; a replay of its letter fails, kept parked', async () => {
    const deadLetters = { ...memoryDeadLetterStore(), durable: true }
    const { webhooks, ran } = receiver({ deadLetters })
    await webhooks.pause('*')
    await webhooks.pause('transaction_settled')
    await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_s' }))
    await deliver(webhooks, sampleEvent('transaction_returned', { eventId: 'evt_r' }))
    const { replay } = await webhooks.resume('*')
    expect(replay).toMatchObject({ processed: 1, failed: 1 })
    expect(ran).toEqual(['evt_r'])
    expect((await deadLetters.get('evt_s'))?.status).toBe('parked')
    await webhooks.resume('transaction_settled')
    expect(ran).toEqual(['evt_r', 'evt_s'])
  })

  it('waits for the first read of a shared store, so a receiver started mid-pause honours it at once', async () => {
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const kept: Pause[] = [{ eventType: 'transaction_settled', reason: '', since: new Date() }]
    const slow: PauseStore = {
      refreshMs: 60_000,
      pause: () => {},
      resume: () => false,
      list: async () => {
        await gate
        return kept
      },
    }
    const { webhooks, ran } = receiver({ pauses: slow })
    const answer = deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_w' }))
    await new Promise((resolve) => setTimeout(resolve, 20))
    release()
    expect((await answer).status).toBe(503)
    expect(ran).toEqual([])
    await webhooks.close()
  })

  it('goes on with the pauses last read when the store fails, warning once', async () => {
    const warnings: string[] = []
    let fail = false
    let failed = 0
    const store = memoryPauseStore()
    const flaky: PauseStore = {
      refreshMs: 10,
      pause: (pause) => store.pause(pause),
      resume: (type) => store.resume(type),
      list: async () => {
        if (!fail) return store.list()
        failed++
        throw new Error('down')
      },
    }
    const logger = { error: () => {}, warn: (...parts: unknown[]) => void warnings.push(parts.map(String).join(' ')) }
    const { webhooks, ran } = receiver({ pauses: flaky, logger })
    await webhooks.pause('transaction_settled')
    fail = true
    // Reads failed several times, not after a fixed time a loaded machine may spend on one: still warned once.
    await vi.waitFor(() => expect(failed).toBeGreaterThanOrEqual(3), { timeout: 10_000, interval: 10 })
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(503)
    expect((await deliver(webhooks, sampleEvent('transaction_returned'))).status).toBe(200)
    expect(ran).toHaveLength(1)
    expect(warnings.filter((line) => line.includes('pause store could not be read'))).toHaveLength(1)
    await webhooks.close()
  })

  it('warns once when a pause without durable dead letters nears the 72-hour window', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] })
    try {
      const warnings: string[] = []
      const logger = { error: () => {}, warn: (...parts: unknown[]) => void warnings.push(parts.map(String).join(' ')) }
      const { webhooks } = receiver({ logger })
      await webhooks.pause('transaction_settled')
      vi.advanceTimersByTime(47 * 3_600_000)
      expect(warnings.filter((line) => line.includes('72 hours'))).toEqual([])
      vi.advanceTimersByTime(2 * 3_600_000)
      expect(warnings.filter((line) => line.includes('72 hours'))).toHaveLength(1)
      vi.advanceTimersByTime(24 * 3_600_000)
      expect(warnings.filter((line) => line.includes('72 hours'))).toHaveLength(1)
    } finally {
      vi.useRealTimers()
    }
  })

  it('refuses a bad type or reason', async () => {
    const { webhooks } = receiver()
    await expect(webhooks.pause('')).rejects.toThrow(TypeError)
    await expect(webhooks.pause('transaction_settled', { reason: 'two\nlines' })).rejects.toThrow(TypeError)
    expect(() => createWebhooks({ secret, pauses: {} as PauseStore })).toThrow(TypeError)
  })
})
