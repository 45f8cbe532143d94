// The journal in webhooks.health(): a warning when its writes fail or its buffer drops answers, never unready.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import { DROP_SHOWN_MS, journalCheck } from './health.js'
import { memoryJournal } from './memory.js'
import { JournalRecorder, MAX_BUFFERED } from './recorder.js'
import type { Journal } from './types.js'

const SECRET = 'whsec_journal_health'
const quiet = { error() {}, warn() {}, info() {} }

async function deliver(webhooks: ReturnType<typeof createWebhooks>) {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

describe('the journal in health()', () => {
  it('warns while its writes are refused, leaving the receiver ready; green again once a write succeeds', async () => {
    let down = true
    const memory = memoryJournal()
    const journal: Journal = {
      ...memory,
      write: (records) => (down ? Promise.reject(new Error('ECONNREFUSED 10.0.0.7')) : memory.write(records)),
    }
    const webhooks = createWebhooks({ secret: SECRET, journal, logger: quiet as never, checkAtStart: false })
    webhooks.on('transaction_settled', () => {})
    expect((await webhooks.health()).checks.find((c) => c.name === 'journal')).toEqual({
      name: 'journal',
      ok: true,
      severity: 'warning',
    })
    expect((await deliver(webhooks)).status).toBe(200)
    await webhooks.events.flush()
    const failing = await webhooks.health()
    expect(failing.ready).toBe(true)
    const check = failing.checks.find((c) => c.name === 'journal')
    expect(check).toMatchObject({ ok: false, severity: 'warning' })
    expect(check?.detail).toContain('its last write was refused')
    expect(JSON.stringify(check)).not.toContain('10.0.0.7')
    down = false
    await deliver(webhooks)
    await webhooks.events.flush()
    expect((await webhooks.health()).checks.find((c) => c.name === 'journal')?.ok).toBe(true)
    await webhooks.close()
  })

  it("a journal's own health() failing or hanging is a warning too", async () => {
    const rejecting: Journal = { ...memoryJournal(), health: () => Promise.reject(new Error('down')) }
    const hanging: Journal = { ...memoryJournal(), health: () => new Promise(() => {}) }
    for (const journal of [rejecting, hanging]) {
      const webhooks = createWebhooks({ secret: SECRET, journal, logger: quiet as never, checkAtStart: false })
      const report = await webhooks.health({ timeoutMs: 50 })
      expect(report.ready).toBe(true)
      const own = report.checks.filter((c) => c.name === 'journal' && !c.ok)
      expect(own).toHaveLength(1)
      expect(own[0]?.severity).toBe('warning')
      await webhooks.close()
    }
  })

  it('warns for a minute after the buffer, full behind a hung journal, dropped an answer', () => {
    const stuck: Journal = { ...memoryJournal(), write: () => new Promise(() => {}) }
    const recorder = new JournalRecorder(stuck, 'web-1', { warn() {}, error() {} } as never)
    const delivery = {
      event: { event_id: 'evt_1', event_type: 'transaction_settled' },
      error: undefined,
      verifiedWith: { index: 0 },
    }
    for (let i = 0; i < MAX_BUFFERED; i++) recorder.answered(delivery, 'processed', 200, Date.now())
    expect(journalCheck(recorder).ok).toBe(true)
    recorder.answered(delivery, 'processed', 200, Date.now())
    const check = journalCheck(recorder)
    expect(check).toMatchObject({ ok: false, severity: 'warning' })
    expect(check.detail).toContain('dropped')
    expect(journalCheck(recorder, Date.now() + DROP_SHOWN_MS + 1).ok).toBe(true)
  })
})
