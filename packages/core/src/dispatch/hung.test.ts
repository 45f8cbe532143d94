// Hung runs (handlers past maxRunMs that ignore their signal) as an operator sees them: stats().hung and inFlight, the
// hung_handlers health check (a warning, an error once hung runs hold every slot), and their end when they settle.
import { describe, expect, it, vi } from 'vitest'
import { type DeadLetterStore, memoryDeadLetterStore } from '../dead-letters/index.js'
import type { WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import { deliverSettled, gate } from '../test-helpers/index.js'

const secret = 'whsec_hung_stats'

describe('hung runs in stats() and health()', () => {
  it('counts them in inFlight and hung, names the oldest, and fails health once they hold every slot', async () => {
    const webhooks = createWebhooks({
      secret,
      store: memoryStore(),
      logger: { error() {}, warn() {} },
      checkAtStart: false,
      deadlineMs: 50,
      maxRunMs: 100,
      maxConcurrentEvents: 2,
      // One type's hung runs filling every slot: what bulkheads (bulkheads.test.ts) keep from happening.
      bulkheads: false,
    })
    const stuck = gate()
    webhooks.on('transaction_settled', () => stuck.promise) // ignores its signal
    try {
      const before = Date.now()
      expect((await deliverSettled(webhooks, 'evt_hung_1', secret)).status).toBe(503)
      await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(1), { timeout: 10_000, interval: 10 })
      const { hung, inFlight } = webhooks.stats()
      expect(inFlight).toBe(1)
      expect(hung.oldest).toMatchObject({ eventId: 'evt_hung_1', eventType: 'transaction_settled' })
      expect(hung.oldest?.since.getTime()).toBeGreaterThanOrEqual(before + 100)
      const warned = await webhooks.health()
      expect(warned.ready).toBe(true)
      expect(warned.checks.find((check) => check.name === 'hung_handlers')).toEqual({
        name: 'hung_handlers',
        ok: false,
        severity: 'warning',
        detail: `1 of 2 event slots held by handlers hung past maxRunMs; the oldest, transaction_settled evt_hung_1, since ${hung.oldest?.since.toISOString()}`,
        fix: 'find the call that ignores context.signal (a fetch or query without it) and pass the signal on',
      })
      expect(warned.checks.find((check) => check.name === 'event_slots')?.detail).toBe(
        '1 of 2 event slots in use, 0 waiting',
      )

      expect((await deliverSettled(webhooks, 'evt_hung_2', secret)).status).toBe(503)
      await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(2), { timeout: 10_000, interval: 10 })
      expect(webhooks.stats()).toMatchObject({ inFlight: 2, hung: { count: 2, oldest: { eventId: 'evt_hung_1' } } })
      const full = await webhooks.health()
      expect(full.ready).toBe(false)
      expect(full.checks.find((check) => check.name === 'hung_handlers')).toMatchObject({
        ok: false,
        severity: 'error',
        fix: 'restart this instance (its hung events run again once their leases end); find the call that ignores context.signal',
      })
      const refused = await deliverSettled(webhooks, 'evt_after', secret)
      expect(refused.status).toBe(503)
      expect(JSON.parse(refused.body).error).toBe('busy')
      // A retry of a hung event needs no slot: 409 in_progress, every slot taken or not (it was 503 busy).
      const copy = await deliverSettled(webhooks, 'evt_hung_1', secret)
      expect([copy.status, JSON.parse(copy.body).error]).toEqual([409, 'in_progress'])
    } finally {
      stuck.open()
    }
    await vi.waitFor(() => expect(webhooks.stats()).toMatchObject({ inFlight: 0, hung: { count: 0, oldest: null } }))
    const healthy = await webhooks.health()
    expect(healthy.ready).toBe(true)
    expect(healthy.checks.map((check) => check.name)).not.toContain('hung_handlers')
    await webhooks.close()
  })
})

describe("a hung run on the service's last tries", () => {
  const HOUR = 3_600_000
  const ago = (hours: number) => new Date(Date.now() - hours * HOUR).toISOString()

  function setup(durable = true) {
    const memory = memoryDeadLetterStore()
    const deadLetters: DeadLetterStore = durable ? { ...memory, durable: true } : memory
    const webhooks = createWebhooks({
      secret,
      store: memoryStore(),
      deadLetters,
      logger: { error() {}, warn() {} },
      checkAtStart: false,
      deadlineMs: 50,
      maxRunMs: 100,
    })
    const errors: WebhookError[] = []
    webhooks.onError((error) => void errors.push(error))
    return { webhooks, deadLetters, errors }
  }

  it('parks a copy that finds it still running (200 parked, not a last 409); a replay then never runs it beside the run, and finds its done marker once it succeeded', async () => {
    const { webhooks, deadLetters, errors } = setup()
    const stuck = gate()
    let runs = 0
    webhooks.on('transaction_settled', async () => {
      runs++
      await stuck.promise // ignores its signal
    })
    const createdAt = ago(71.5)
    try {
      expect((await deliverSettled(webhooks, 'evt_last_hung', secret, createdAt)).status).toBe(503)
      await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(1), { timeout: 10_000, interval: 10 })
      const copy = await deliverSettled(webhooks, 'evt_last_hung', secret, createdAt)
      expect(copy.status).toBe(200)
      expect(JSON.parse(copy.body)).toMatchObject({ status: 'parked' })
      expect(await deadLetters.get('evt_last_hung')).toMatchObject({ code: 'handler_failed', status: 'parked' })
      expect((await deadLetters.get('evt_last_hung'))?.reason).toContain('still running')
      expect(errors.map((error) => error.code)).toEqual(['deadline_exceeded', 'handler_timeout', 'event_held'])
      expect(errors[2]).toMatchObject({ parked: true, answered: { status: 200, code: 'parked' } })
      // The letter replayed while the run goes on: refused as in progress, not run beside it.
      expect(await webhooks.deadLetters.replay('evt_last_hung')).toMatchObject({ status: 'in_progress' })
      expect(runs).toBe(1)
    } finally {
      stuck.open()
    }
    await vi.waitFor(() => expect(webhooks.stats().inFlight).toBe(0), { timeout: 10_000, interval: 10 })
    // The run succeeded: its done marker makes the replay a duplicate, and the letter reads replayed.
    expect(await webhooks.deadLetters.replay('evt_last_hung')).toMatchObject({ status: 'duplicate' })
    expect(await deadLetters.get('evt_last_hung')).toMatchObject({ status: 'replayed' })
    expect(runs).toBe(1)
    await webhooks.close()
  })

  it('answers the copy 409 in_progress when the dead-letter store is not durable (kept, not acknowledged)', async () => {
    const { webhooks, deadLetters } = setup(false)
    const stuck = gate()
    webhooks.on('transaction_settled', () => stuck.promise)
    const createdAt = ago(71.5)
    try {
      expect((await deliverSettled(webhooks, 'evt_last_memory', secret, createdAt)).status).toBe(503)
      const copy = await deliverSettled(webhooks, 'evt_last_memory', secret, createdAt)
      expect(copy.status).toBe(409)
      expect(JSON.parse(copy.body)).toMatchObject({ error: 'in_progress' })
      expect(await deadLetters.get('evt_last_memory')).toMatchObject({ status: 'parked' })
    } finally {
      stuck.open()
    }
    await webhooks.close()
  })

  it('parks a hung run that fails once the service stopped retrying; the letter replays it once', async () => {
    const { webhooks, deadLetters, errors } = setup()
    const stuck = gate()
    let runs = 0
    let failing = true
    webhooks.on('transaction_settled', async () => {
      runs++
      if (!failing) return
      await stuck.promise // ignores its signal
      throw new Error('ledger down')
    })
    // Signed 72.5 hours ago: past the service's last retry, nothing comes after this delivery.
    const createdAt = ago(72.5)
    expect((await deliverSettled(webhooks, 'evt_after_window', secret, createdAt)).status).toBe(503)
    await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(1), { timeout: 10_000, interval: 10 })
    expect(await deadLetters.get('evt_after_window')).toBeUndefined()
    stuck.open()
    await vi.waitFor(
      async () => expect(await deadLetters.get('evt_after_window')).toMatchObject({ status: 'parked' }),
      {
        timeout: 10_000,
        interval: 10,
      },
    )
    expect(errors.find((error) => error.code === 'handler_failed')).toMatchObject({ parked: true })
    failing = false
    expect(await webhooks.deadLetters.replay('evt_after_window')).toMatchObject({ status: 'processed' })
    expect(runs).toBe(2)
    await webhooks.close()
  })

  it('keeps one letter when a copy parked it and the hung run then fails: the replay runs it once', async () => {
    const { webhooks, deadLetters } = setup()
    const stuck = gate()
    let runs = 0
    let failing = true
    webhooks.on('transaction_settled', async () => {
      runs++
      if (!failing) return
      await stuck.promise
      throw new Error('ledger down')
    })
    const createdAt = ago(71.5)
    expect((await deliverSettled(webhooks, 'evt_parked_then_failed', secret, createdAt)).status).toBe(503)
    expect((await deliverSettled(webhooks, 'evt_parked_then_failed', secret, createdAt)).status).toBe(200)
    stuck.open()
    await vi.waitFor(() => expect(webhooks.stats().inFlight).toBe(0), { timeout: 10_000, interval: 10 })
    expect(await deadLetters.get('evt_parked_then_failed')).toMatchObject({ status: 'parked' })
    failing = false
    expect(await webhooks.deadLetters.replay('evt_parked_then_failed')).toMatchObject({ status: 'processed' })
    expect(await webhooks.deadLetters.replay('evt_parked_then_failed')).toMatchObject({ status: 'duplicate' })
    expect(runs).toBe(2)
    await webhooks.close()
  })

  it('parks a hung run that fails after close() timed out: the dead-letter store is shut down only after it', async () => {
    const memory = memoryDeadLetterStore()
    let shut = false
    const deadLetters: DeadLetterStore = {
      ...memory,
      durable: true,
      park(letter) {
        if (shut) throw new Error('connection closed') // as a Redis client quit by shutdown()
        return memory.park(letter)
      },
      shutdown() {
        shut = true
      },
    }
    const webhooks = createWebhooks({
      secret,
      store: memoryStore(),
      deadLetters,
      logger: { error() {}, warn() {} },
      checkAtStart: false,
      deadlineMs: 50,
      maxRunMs: 100,
    })
    webhooks.onError(() => {})
    const stuck = gate()
    webhooks.on('transaction_settled', async () => {
      await stuck.promise // ignores its signal
      throw new Error('ledger down')
    })
    expect((await deliverSettled(webhooks, 'evt_closed_hung', secret, ago(72.5))).status).toBe(503)
    await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(1), { timeout: 10_000, interval: 10 })
    await webhooks.close({ timeoutMs: 20 })
    expect(shut).toBe(false)
    stuck.open()
    await vi.waitFor(() => expect(shut).toBe(true), { timeout: 10_000, interval: 10 })
    expect(memory.get('evt_closed_hung')).toMatchObject({ status: 'parked', code: 'handler_failed' })
  })
})
