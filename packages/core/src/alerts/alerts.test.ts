// The alerts a receiver raises about itself, each raised once and resolved once, on a driven clock: silence,
// signature failures, hung handlers, dead letters growing. The log, health() and the listeners all see them.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { memoryDeadLetterStore } from '../dead-letters/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import { driveClock } from '../test-helpers/clock.js'
import { gate } from '../test-helpers/index.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import type { Alert } from './types.js'

const SECRET = 'whsec_alerts_core'

function receiver(options: Partial<WebhooksOptions>) {
  const lines: string[] = []
  const logger = { error: (line: string) => lines.push(line), warn: (line: string) => lines.push(line) }
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), checkAtStart: false, logger, ...options })
  const alerts: Alert[] = []
  webhooks.onAlert((alert) => alerts.push(alert))
  return { webhooks, alerts, lines }
}

async function deliver(
  webhooks: { receive: ReturnType<typeof createWebhooks>['receive'] },
  event: object,
  secret = SECRET,
) {
  const { body, headers } = await signedDelivery(event, secret)
  return webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
}

const names = (alerts: Alert[]) => alerts.map((a) => [a.name, a.firing, a.eventType ?? null])

describe('alerts', () => {
  it('silence: raised when no delivery verified for silenceMs (and per type), resolved by the next one', async () => {
    driveClock()
    const { webhooks, alerts, lines } = receiver({
      alerts: { silence: { silenceMs: 60_000, types: { transaction_returned: 120_000 } }, checkEveryMs: 1000 },
    })
    webhooks.onAny(() => {})
    const start = Date.now()
    await vi.advanceTimersByTimeAsync(59_000)
    expect(alerts).toEqual([])
    await vi.advanceTimersByTimeAsync(2000)
    expect(names(alerts)).toEqual([['silence', true, null]])
    expect(alerts[0]).toMatchObject({ severity: 'warning', since: new Date(start) })
    expect(alerts[0]?.message).toMatch(/^no delivery verified for 60 s \(silenceMs 60 s\)/)
    expect(lines.at(-1)).toMatch(/^\[payhooks\] alert silence \(warning\): no delivery verified/)
    const health = await webhooks.health()
    expect(health.ready).toBe(true)
    expect(health.checks.find((check) => check.name === 'alert_silence')).toMatchObject({
      ok: false,
      severity: 'warning',
    })
    // Raised once: later ticks say nothing more.
    await vi.advanceTimersByTimeAsync(30_000)
    expect(alerts).toHaveLength(1)

    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    await vi.advanceTimersByTimeAsync(1000)
    expect(names(alerts)).toEqual([
      ['silence', true, null],
      ['silence', false, null],
    ])
    expect(alerts[1]?.resolvedAt).toBeInstanceOf(Date)
    // transaction_returned: none for 120 s.
    await vi.advanceTimersByTimeAsync(30_000)
    expect(names(alerts).at(-1)).toEqual(['silence', true, 'transaction_returned'])
    expect(webhooks.alerts().map((a) => a.eventType)).toEqual(['transaction_returned'])
    expect((await deliver(webhooks, sampleEvent('transaction_returned'))).status).toBe(200)
    await vi.advanceTimersByTimeAsync(1000)
    expect(names(alerts).at(-1)).toEqual(['silence', false, 'transaction_returned'])
    expect(alerts).toHaveLength(4)
    expect(webhooks.alerts()).toEqual([])
    await webhooks.close()
  })

  it('signature_failures: a run of deliveries no secret verifies names the labels tried, never a secret', async () => {
    driveClock()
    const { webhooks, alerts, lines } = receiver({
      secret: [{ secret: SECRET, label: '2026-q4' }, 'whsec_older_one'],
      alerts: { signatureFailures: { after: 3 }, checkEveryMs: 1000 },
    })
    webhooks.onAny(() => {})
    const wrong = 'whsec_rotated_in_the_portal'
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), wrong)).status).toBe(401)
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), wrong)).status).toBe(401)
    // A delivery that verifies breaks the run.
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    expect((await deliver(webhooks, sampleEvent('transaction_settled'), wrong)).status).toBe(401)
    await vi.advanceTimersByTimeAsync(1000)
    expect(alerts).toEqual([])
    const first = Date.now()
    for (let i = 0; i < 3; i++) {
      expect((await deliver(webhooks, sampleEvent('transaction_settled'), wrong)).status).toBe(401)
    }
    await vi.advanceTimersByTimeAsync(1000)
    expect(names(alerts)).toEqual([['signature_failures', true, null]])
    expect(alerts[0]).toMatchObject({ severity: 'critical', secretLabels: ['2026-q4', '#1'] })
    expect(alerts[0]?.since.getTime()).toBeLessThanOrEqual(first)
    expect(alerts[0]?.message).toMatch(
      /^4 deliveries in a row matched none of the secrets 2026-q4, #1: likely a secret rotated/,
    )
    for (const text of [...lines, JSON.stringify(alerts)]) {
      expect(text).not.toContain(SECRET)
      expect(text).not.toContain('whsec_older_one')
      expect(text).not.toContain(wrong)
    }
    expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    await vi.advanceTimersByTimeAsync(1000)
    expect(names(alerts)).toEqual([
      ['signature_failures', true, null],
      ['signature_failures', false, null],
    ])
    await webhooks.close()
  })

  it('handlers_hung: raised while a handler hangs past maxRunMs, resolved when it settles', async () => {
    driveClock()
    const { webhooks, alerts } = receiver({
      deadlineMs: 50,
      maxRunMs: 100,
      maxConcurrentEvents: 4,
      bulkheads: false,
      alerts: { checkEveryMs: 1000 },
    })
    const stuck = gate()
    webhooks.on('transaction_settled', () => stuck.promise) // ignores its signal
    const answer = deliver(webhooks, sampleEvent('transaction_settled'))
    await vi.advanceTimersByTimeAsync(60)
    expect((await answer).status).toBe(503)
    await vi.advanceTimersByTimeAsync(1000)
    expect(names(alerts)).toEqual([['handlers_hung', true, null]])
    expect(alerts[0]?.severity).toBe('warning')
    expect(alerts[0]?.message).toMatch(/^1 of 4 event slots held by handlers hung past maxRunMs/)
    expect(webhooks.alerts()).toHaveLength(1)
    stuck.open()
    await vi.advanceTimersByTimeAsync(1000)
    expect(names(alerts)).toEqual([
      ['handlers_hung', true, null],
      ['handlers_hung', false, null],
    ])
    await webhooks.close()
  })

  it('dead_letters_growing: raised when parked letters grow by `growth` in the window, resolved after a window without growth', async () => {
    driveClock()
    const deadLetters = memoryDeadLetterStore()
    const { webhooks, alerts } = receiver({
      deadLetters,
      alerts: { deadLettersGrowing: { growth: 3, windowMs: 60_000, everyMs: 10_000 }, checkEveryMs: 1000 },
    })
    webhooks.on('transaction_settled', () => {})
    const refused = () => ({ ...sampleEvent('transaction_settled'), data: { transaction_id: 42 } })
    await vi.advanceTimersByTimeAsync(1000)
    for (let i = 0; i < 2; i++) expect((await deliver(webhooks, refused())).status).toBe(422)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(alerts).toEqual([])
    expect((await deliver(webhooks, refused())).status).toBe(422)
    expect(await deadLetters.count({ status: 'parked' })).toBe(3)
    await vi.advanceTimersByTimeAsync(10_000)
    expect(names(alerts)).toEqual([['dead_letters_growing', true, null]])
    expect(alerts[0]?.message).toMatch(/^dead letters parked grew by 3 to 3 within 60 s/)
    // Still growing, slower: stays raised, said once.
    await vi.advanceTimersByTimeAsync(20_000)
    expect((await deliver(webhooks, refused())).status).toBe(422)
    await vi.advanceTimersByTimeAsync(40_000)
    expect(alerts).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(60_000)
    expect(names(alerts)).toEqual([
      ['dead_letters_growing', true, null],
      ['dead_letters_growing', false, null],
    ])
    await webhooks.close()
  })

  it('alerts: false runs no timer; close() stops the timer; a failing listener is logged and the others still run', async () => {
    driveClock()
    const timers = vi.getTimerCount()
    const off = createWebhooks({ secret: SECRET, store: memoryStore(), checkAtStart: false, alerts: false })
    expect(vi.getTimerCount()).toBe(timers)
    expect(off.alerts()).toEqual([])
    await off.close()

    const { webhooks, alerts, lines } = receiver({ alerts: { silence: { silenceMs: 5000 }, checkEveryMs: 1000 } })
    const failing = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      checkAtStart: false,
      logger: { error: (line) => lines.push(line), warn: (line) => lines.push(line) },
      alerts: { silence: { silenceMs: 5000 }, checkEveryMs: 1000 },
    })
    const got: Alert[] = []
    failing.onAlert(() => {
      throw new Error('chat webhook down')
    })
    failing.onAlert(async () => Promise.reject(new Error('rejected')))
    failing.onAlert((alert) => got.push(alert))
    await vi.advanceTimersByTimeAsync(6000)
    expect(got.map((a) => a.name)).toEqual(['silence'])
    expect(lines.filter((line) => line.includes('an onAlert listener failed'))).toHaveLength(2)
    expect(lines.join('\n')).not.toContain('chat webhook down')
    await failing.close()
    await webhooks.close()
    expect(alerts).toHaveLength(1)
    await vi.advanceTimersByTimeAsync(60_000)
    expect(alerts).toHaveLength(1)
  })

  it('keeps no process alive: its timer is unreferenced', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((name) => name === 'Timeout').length
    const make = (alerts: WebhooksOptions['alerts']) =>
      createWebhooks({ secret: SECRET, store: memoryStore(), checkAtStart: false, alerts })
    const before = timers()
    const off = make(false)
    const without = timers() - before
    const on = make({ silence: { silenceMs: 1000 }, checkEveryMs: 10 })
    expect(timers() - before).toBe(without * 2)
    await Promise.all([off.close(), on.close()])
  })

  it('refuses bad options, naming them', () => {
    const make = (alerts: unknown) => () =>
      createWebhooks({ secret: SECRET, store: memoryStore(), checkAtStart: false, alerts: alerts as never })
    expect(make({ silence: {} })).toThrow('createWebhooks: alerts.silence must give silenceMs or types')
    expect(make({ signatureFailures: { after: 0 } })).toThrow(
      /alerts.signatureFailures.after must be a positive integer/,
    )
    expect(make({ subscription: { id: 'wsub_1' } })).toThrow(/alerts.subscription.client must be a client/)
    expect(make({ checkEveryMs: -1 })).toThrow(/alerts.checkEveryMs/)
  })
})
