// The board's overview shows the alerts firing on this instance (webhooks.alerts()), and health() shows each of
// them as an alert_<name> check; a receiver without alerts() shows none.
import { createWebhooks, memoryDeadLetterStore, memoryStore } from '@payhooks/core'
import { describe, expect, it, vi } from 'vitest'
import { createBoard } from './board.js'
import { json, request, SECRET } from './test-helpers.js'

describe('the overview: alerts', () => {
  it('lists the alerts firing, as health() does; a receiver without alerts() shows none', async () => {
    const webhooks = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      deadLetters: memoryDeadLetterStore(),
      checkAtStart: false,
      logger: { error() {}, warn() {} },
      alerts: { silence: { silenceMs: 100 }, checkEveryMs: 20 },
    })
    const board = createBoard({ webhooks, authorize: () => true })
    try {
      await vi.waitFor(() => expect(webhooks.alerts()).toHaveLength(1), { timeout: 10_000, interval: 20 })
      // One gathering a second is shared between loads: wait it out.
      await new Promise((resolve) => setTimeout(resolve, 1100))
      const overview = json(await board.handle(request({ path: '/api/overview' })))
      expect(overview.alerts).toEqual([
        {
          name: 'silence',
          severity: 'warning',
          since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
          message: expect.stringMatching(/^no delivery verified for /),
        },
      ])
      expect(overview.health.checks).toContainEqual(
        expect.objectContaining({ name: 'alert_silence', ok: false, severity: 'warning' }),
      )
      const older = createBoard({ webhooks: { deadLetters: webhooks.deadLetters }, authorize: () => true })
      expect(json(await older.handle(request({ path: '/api/overview' }))).alerts).toBeNull()
    } finally {
      await webhooks.close()
    }
  })
})
