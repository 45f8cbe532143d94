// journal_dropping: a journal refusing writes (as a full Redis refuses them) while deliveries go on fills the
// recorder's buffer, which drops answers: the alert is raised, and resolved once nothing was dropped for quietMs.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { memoryJournal } from '../journal/index.js'
import { MAX_BUFFERED } from '../journal/recorder.js'
import type { Journal } from '../journal/types.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import { driveClock } from '../test-helpers/clock.js'
import type { Alert } from './types.js'

const SECRET = 'whsec_alerts_journal'

describe('journal_dropping', () => {
  it('is raised when the full buffer drops answers and resolved after quietMs without a drop', async () => {
    driveClock()
    const inner = memoryJournal()
    const state = { down: true }
    const journal: Journal = {
      ...inner,
      write: (records) =>
        state.down
          ? Promise.reject(new Error('OOM command not allowed when used memory > maxmemory'))
          : inner.write(records),
    }
    const quiet = { error() {}, warn() {} }
    const webhooks = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      journal,
      checkAtStart: false,
      logger: quiet,
      alerts: { journalDropping: { quietMs: 30_000 }, checkEveryMs: 1000 },
    })
    webhooks.on('transaction_settled', () => {})
    const alerts: Alert[] = []
    webhooks.onAlert((alert) => alerts.push(alert))
    const deliveries = MAX_BUFFERED + 50
    for (let i = 0; i < deliveries; i++) {
      const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
      const answer = await webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
      expect(answer.status).toBe(200)
    }
    await vi.advanceTimersByTimeAsync(1000)
    expect(alerts.map((a) => [a.name, a.firing, a.severity])).toEqual([['journal_dropping', true, 'warning']])
    expect(alerts[0]?.message).toMatch(/^the journal dropped answers in the last 30 s, its buffer full/)
    expect((await webhooks.health()).checks.map((check) => check.name)).toContain('alert_journal_dropping')
    state.down = false
    await vi.advanceTimersByTimeAsync(20_000)
    expect(alerts).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(15_000)
    expect(alerts.map((a) => [a.name, a.firing])).toEqual([
      ['journal_dropping', true],
      ['journal_dropping', false],
    ])
    await webhooks.close()
  }, 120_000)
})
