import { signedDelivery } from '@payhooks/testing'
import { beforeEach, describe, expect, it } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import { driveClock, settleOnClock } from '../test-helpers/clock.js'
import { settledBody } from '../test-helpers/index.js'
import type { WebhookResult } from '../types.js'
import { parseRequestStart } from './proxy-arrival.js'

const secret = 'whsec_proxy_arrival'

/** A receiver whose handler takes `handlerMs`, and what it ran and warned. */
function receiver(options: { proxyArrival?: { header: string; maxSkewMs?: number }; handlerMs?: number } = {}) {
  const ran: string[] = []
  const warnings: string[] = []
  const errors: string[] = []
  const log = { info: () => {}, error: () => {}, warn: (_fields: unknown, message: string) => warnings.push(message) }
  const webhooks = createWebhooks({ secret, deadlineMs: 300, logger: log, proxyArrival: options.proxyArrival })
  webhooks.on('transaction_settled', async (event) => {
    await new Promise((resolve) => setTimeout(resolve, options.handlerMs ?? 0))
    ran.push(event.event_id)
  })
  webhooks.onError((error) => errors.push(error.code))
  return { webhooks, ran, warnings, errors }
}

/** Receives a signed event with `extra` headers, timing the answer on the clock the test drives (to 5 ms). */
async function deliver(
  webhooks: ReturnType<typeof receiver>['webhooks'],
  eventId: string,
  extra: Record<string, string>,
): Promise<WebhookResult & { ms: number }> {
  const { body, headers } = await signedDelivery(settledBody(eventId), secret)
  const all: Record<string, string> = { ...(headers as Record<string, string>), ...extra }
  const { value, ms } = await settleOnClock(webhooks.receive({ method: 'POST', body, getHeader: (name) => all[name] }))
  return { ...value, ms }
}

const msec = (ms: number) => `t=${(ms / 1000).toFixed(3)}`

describe('parseRequestStart', () => {
  it("reads nginx's $msec and whole seconds, milliseconds and microseconds, with or without t=", () => {
    expect(parseRequestStart('t=1700000000.123')).toBe(1700000000123)
    expect(parseRequestStart('1700000000.5')).toBe(1700000000500)
    expect(parseRequestStart('t=1700000000')).toBe(1700000000000)
    expect(parseRequestStart('t=1700000000123')).toBe(1700000000123)
    expect(parseRequestStart('t=1700000000123456')).toBe(1700000000123.456)
    expect(parseRequestStart(' t=1700000000123 ')).toBe(1700000000123)
  })

  it('refuses anything else', () => {
    for (const value of ['', 't=', 'abc', 't=-1', 't=1e12', 't=1700000000.', 'x=1700000000', '1700000000,1']) {
      expect(parseRequestStart(value), value).toBeUndefined()
    }
  })
})

// On a clock the test drives: the time a proxy held a request, the handlers' time and the deadline are all read from
// it, so a loaded machine's timers cannot move one past another.
describe('proxyArrival', () => {
  beforeEach(driveClock)

  it('counts the deadline from the time the proxy gives: a request it held past the deadline is 408 at once, nothing run', async () => {
    const { webhooks, ran, errors } = receiver({ proxyArrival: { header: 'x-request-start' }, handlerMs: 50 })
    const late = await deliver(webhooks, 'evt_held', { 'x-request-start': msec(Date.now() - 400) })
    expect(late.status).toBe(408)
    expect(late.ms).toBe(0)
    expect(errors).toEqual(['body_timeout'])
    // Held 240 ms of the 300: the 50 ms handler fits in the 60 ms left.
    const inTime = await deliver(webhooks, 'evt_in_time', { 'x-request-start': msec(Date.now() - 240) })
    expect(inTime.status).toBe(200)
    expect(inTime.ms).toBe(50)
    expect(ran).toEqual(['evt_in_time'])
  })

  it('answers a handler running past the proxy-counted deadline 503 at that deadline, not its own', async () => {
    const { webhooks } = receiver({ proxyArrival: { header: 'x-request-start' }, handlerMs: 1000 })
    const answer = await deliver(webhooks, 'evt_slow', { 'x-request-start': msec(Date.now() - 200) })
    expect(answer.status).toBe(503)
    expect(answer.ms).toBe(100)
  })

  it('ignores the header when not configured, whatever a client sends', async () => {
    const { webhooks, ran } = receiver()
    const answer = await deliver(webhooks, 'evt_forged', { 'x-request-start': msec(Date.now() - 60_000) })
    expect(answer.status).toBe(200)
    expect(ran).toEqual(['evt_forged'])
  })

  it('never extends the deadline: a time in the future counts as now', async () => {
    const { webhooks, warnings } = receiver({ proxyArrival: { header: 'X-Request-Start' }, handlerMs: 1000 })
    const near = await deliver(webhooks, 'evt_near', { 'x-request-start': msec(Date.now() + 800) })
    expect(near.status).toBe(503)
    expect(near.ms).toBe(300)
    expect(warnings).toEqual([])
    const far = await deliver(webhooks, 'evt_far', { 'x-request-start': msec(Date.now() + 60_000) })
    expect(far.status).toBe(503)
    expect(far.ms).toBe(300)
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toMatch(/x-request-start header is \d+ ms ahead/)
  })

  it('uses its own arrival time, warning once per kind, when the header is missing, unreadable or implausibly old', async () => {
    const { webhooks, ran, warnings } = receiver({ proxyArrival: { header: 'x-request-start' } })
    const answers = [
      await deliver(webhooks, 'evt_missing_1', {}),
      await deliver(webhooks, 'evt_missing_2', {}),
      await deliver(webhooks, 'evt_garbage', { 'x-request-start': 'yesterday' }),
      await deliver(webhooks, 'evt_old', { 'x-request-start': msec(Date.now() - 3_600_000) }),
    ]
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
    expect(ran).toHaveLength(4)
    expect(warnings).toHaveLength(3)
    expect(warnings[0]).toMatch(/x-request-start header is missing/)
    expect(warnings[1]).toMatch(/is not a time/)
    expect(warnings[2]).toMatch(/is \d+ ms old/)
  })

  it('refuses a malformed option', () => {
    expect(() => createWebhooks({ secret, proxyArrival: { header: '' } })).toThrow(
      'createWebhooks: proxyArrival.header must be a header name',
    )
    expect(() => createWebhooks({ secret, proxyArrival: { header: 'x-request-start', maxSkewMs: -1 } })).toThrow(
      RangeError,
    )
  })
})
