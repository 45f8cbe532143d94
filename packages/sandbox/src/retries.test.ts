import { createWebhooks, SIGNATURE_HEADER } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { REFUSING_PORT, type Receiver } from './test-receivers.js'
import { cleanup, closeAll, HOUR, only, receiverOf, START, sandboxOf, scheduledHours } from './test-sandbox.js'
import type { SandboxDelivery } from './types.js'

afterEach(closeAll)

describe('sandbox retry schedule (manual clock)', () => {
  it('works with a receiver on its defaults after any advance: created_at is the wall clock, the manual clock moves only the retries', async () => {
    const sandbox = sandboxOf({ clock: 'manual' })
    let ledgerUp = false
    const receiver = await receiverOf(async (request) => {
      const secret = sandbox.subscriptions()[0]?.signature_secret as string
      const webhooks = createWebhooks({ secret, logger: { error: () => {} } }).on('transaction_settled', () => {
        if (!ledgerUp) throw new Error('ledger down')
      })
      const result = await webhooks.receive({
        body: request.body,
        getHeader: (name) => request.headers[name] as string | undefined,
      })
      return { status: result.status, body: result.body }
    })
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })

    await sandbox.advance(3 * HOUR)
    const { eventId } = await sandbox.emit('transaction_settled')
    await sandbox.advance(HOUR)
    ledgerUp = true
    await sandbox.advance(HOUR)

    const delivery = only(sandbox.deliveries(eventId))
    expect(delivery.attempts.map((a) => [a.status, a.response])).toEqual([
      [500, '{"error":"handler_failed","message":"a handler failed; retry later"}'],
      [500, '{"error":"handler_failed","message":"a handler failed; retry later"}'],
      [200, `{"ok":true,"event_id":"${eventId}","status":"processed"}`],
    ])
    expect(delivery.state).toBe('delivered')
  })

  it('retries hourly until the first 2XX: failing for 3 hours gives exactly 4 attempts, 1 h apart', async () => {
    const sandbox = sandboxOf()
    const receiver = await receiverOf(() => (sandbox.clock.now() - START < 3 * HOUR ? 500 : 200))
    sandbox.subscribe({ url: receiver.url, eventTypes: ['sale_created_from_batch'] })
    const { eventId } = await sandbox.emit('sale_created_from_batch')

    let delivery = only(sandbox.deliveries(eventId))
    expect(delivery).toMatchObject({ state: 'pending', nextAttemptTime: START + HOUR })
    await sandbox.advance(HOUR - 1)
    expect(receiver.requests).toHaveLength(1)
    await sandbox.advance(1)
    expect(receiver.requests).toHaveLength(2)

    await sandbox.advance(100 * HOUR)
    delivery = only(sandbox.deliveries(eventId))
    expect(delivery.state).toBe('delivered')
    expect(delivery.nextAttemptTime).toBeUndefined()
    expect(scheduledHours(delivery)).toEqual([0, 1, 2, 3])
    expect(delivery.attempts.map((a) => a.status)).toEqual([500, 500, 500, 200])
    expect(delivery.attempts.map((a) => a.retry)).toEqual([0, 1, 2, 3])
    expect(receiver.requests).toHaveLength(4)
    // Every retry is the same message, byte for byte.
    expect(new Set(receiver.requests.map((r) => r.body.toString())).size).toBe(1)
  })

  it('gives up after 72 hours: a receiver that always fails gets exactly 73 attempts', async () => {
    const sandbox = sandboxOf()
    const receiver = await receiverOf(() => 503)
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_returned'] })
    const { eventId } = await sandbox.emit('transaction_returned')

    await sandbox.advance(72 * HOUR - 1)
    let delivery = only(sandbox.deliveries(eventId))
    expect(delivery.attempts).toHaveLength(72)
    expect(delivery).toMatchObject({ state: 'pending', nextAttemptTime: START + 72 * HOUR })

    await sandbox.advance(1)
    delivery = only(sandbox.deliveries(eventId))
    expect(delivery.state).toBe('failed')
    expect(delivery.reason).toMatch(/72 hours/)
    expect(scheduledHours(delivery)).toEqual(Array.from({ length: 73 }, (_, hour) => hour))

    await sandbox.advance(500 * HOUR)
    expect(receiver.requests).toHaveLength(73)
    expect(only(sandbox.deliveries(eventId)).attempts).toHaveLength(73)
    expect(sandbox.clock.now()).toBe(START + 572 * HOUR)
  })

  it('counts a receiver that does not answer within the timeout as a failure and retries', async () => {
    let hold = true
    const released: (() => void)[] = []
    cleanup.push(async () => {
      for (const release of released) release()
    })
    const sandbox = sandboxOf({ deliveryTimeoutMs: 1500 })
    const receiver = await receiverOf(() =>
      hold ? new Promise<number>((resolve) => released.push(() => resolve(200))) : 200,
    )
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const { eventId } = await sandbox.emit('transaction_settled')

    let delivery = only(sandbox.deliveries(eventId))
    expect(delivery.state).toBe('pending')
    expect(only(delivery.attempts)).toMatchObject({ ok: false, error: 'no answer within 1500 ms' })
    expect(only(delivery.attempts).status).toBeUndefined()

    hold = false
    await sandbox.advance(HOUR)
    delivery = only(sandbox.deliveries(eventId))
    expect(delivery.state).toBe('delivered')
    expect(delivery.attempts.map((a) => a.ok)).toEqual([false, true])
  })

  it('counts a refused connection and a redirect as failures', async () => {
    const sandbox = sandboxOf()
    const port = REFUSING_PORT
    const redirecting = await receiverOf(() => 302)
    sandbox.subscribe({ url: `http://127.0.0.1:${port}/hooks`, eventTypes: ['transaction_settled'] })
    sandbox.subscribe({ url: redirecting.url, eventTypes: ['transaction_settled'] })
    const entry = await sandbox.emit('transaction_settled')
    const [refused, redirected] = entry.deliveries as [SandboxDelivery, SandboxDelivery]
    expect(refused.state).toBe('pending')
    expect(only(refused.attempts).error).toMatch(/ECONNREFUSED/)
    expect(redirected.state).toBe('pending')
    expect(only(redirected.attempts)).toMatchObject({ status: 302, ok: false })
  })

  it('skips sends while the subscription is inactive, and ends the delivery when it is deleted', async () => {
    const sandbox = sandboxOf()
    const { url } = await sandbox.listen()
    const receiver = await receiverOf(() => 500)
    const auth = {
      authorization: `reseller ${sandbox.credentials.resellers[0]?.key}`,
      'content-type': 'application/json',
    }
    const created = await fetch(`${url}/ps/webhook/subscription`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ url: receiver.url, event_types: ['transaction_settled'], is_active: true }),
    })
    const { id } = ((await created.json()) as { data: { id: string } }).data
    const { eventId } = await sandbox.emit('transaction_settled')
    const put = (body: unknown) =>
      fetch(`${url}/ps/webhook/subscription/${id}`, { method: 'PUT', headers: auth, body: JSON.stringify(body) })

    expect((await put({ is_active: false })).status).toBe(204)
    await sandbox.advance(2 * HOUR)
    expect(receiver.requests).toHaveLength(1)
    expect((await put({ is_active: true })).status).toBe(204)
    await sandbox.advance(HOUR)
    expect(receiver.requests).toHaveLength(2)
    expect(scheduledHours(only(sandbox.deliveries(eventId)))).toEqual([0, 3])

    expect((await fetch(`${url}/ps/webhook/subscription/${id}`, { method: 'DELETE', headers: auth })).status).toBe(204)
    expect(only(sandbox.deliveries(eventId))).toMatchObject({ state: 'failed', reason: 'subscription deleted' })
    await sandbox.advance(10 * HOUR)
    expect(receiver.requests).toHaveLength(2)
  })
})

describe('sandbox resend', () => {
  it('sends the same bytes again, and a 2XX to a resend ends a pending delivery', async () => {
    let status = 500
    const sandbox = sandboxOf()
    const receiver = await receiverOf(() => status)
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const { eventId } = await sandbox.emit('transaction_settled')
    status = 200
    await sandbox.resend(eventId)
    const delivery = only(sandbox.deliveries(eventId))
    expect(delivery.state).toBe('delivered')
    expect(delivery.attempts.map((a) => a.kind)).toEqual(['scheduled', 'resend'])
    expect(receiver.requests).toHaveLength(2)
    const [first, second] = receiver.requests as [Receiver['requests'][0], Receiver['requests'][0]]
    expect(second.body.equals(first.body)).toBe(true)
    expect(second.headers[SIGNATURE_HEADER]).toBe(first.headers[SIGNATURE_HEADER])
    // No retry is left once delivered.
    await sandbox.advance(80 * HOUR)
    expect(receiver.requests).toHaveLength(2)
  })
})
