// Hung runs (handlers past maxRunMs that ignore their signal) as an operator sees them: stats().hung and inFlight, the
// hung_handlers health check (a warning, an error once hung runs hold every slot), and their end when they settle.
import { describe, expect, it, vi } from 'vitest'
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
      await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(1), { timeout: 2000, interval: 10 })
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
      await vi.waitFor(() => expect(webhooks.stats().hung.count).toBe(2), { timeout: 2000, interval: 10 })
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
