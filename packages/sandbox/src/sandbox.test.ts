import { createWebhooks, SIGNATURE_HEADER, verify } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { createManualClock } from './clock.js'
import type { SandboxOptions } from './options.js'
import { createSandbox } from './server.js'
import { type Receiver, startReceiver, unusedPort } from './test-receivers.js'
import type { Sandbox, SandboxDelivery, SandboxLogEntry } from './types.js'

const HOUR = 3_600_000
const START = Date.parse('2026-11-02T15:00:00Z')

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close()
})

function sandboxOf(options: SandboxOptions = {}): Sandbox {
  const sandbox = createSandbox({ clock: createManualClock({ start: START }), ...options })
  cleanup.push(() => sandbox.close())
  return sandbox
}

async function receiverOf(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const receiver = await startReceiver(...args)
  cleanup.push(() => receiver.close())
  return receiver
}

const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1)
  return list[0] as T
}

/** Offsets from the first send, in hours, of a delivery's scheduled attempts. */
const scheduledHours = (delivery: SandboxDelivery) =>
  delivery.attempts.filter((a) => a.kind === 'scheduled').map((a) => (a.time - delivery.firstAttemptTime) / HOUR)

describe('sandbox emit and delivery', () => {
  it('POSTs the message as JSON, signed over the exact bytes with the subscription secret', async () => {
    const receiver = await receiverOf()
    const sandbox = sandboxOf()
    const { signature_secret } = sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const entry = await sandbox.emit('transaction_settled', { transaction_description: 'Crème brûlée ☕' })

    const request = only(receiver.requests)
    expect(request.method).toBe('POST')
    expect(request.headers['content-type']).toBe('application/json')
    const header = request.headers[SIGNATURE_HEADER] as string
    expect(header).toMatch(/^[0-9A-F]{64}$/)
    expect(await verify(signature_secret, request.body, header)).toBe(true)
    expect(await verify('another-secret', request.body, header)).toBe(false)
    // The body is pure ASCII (spec 6.2), and it is the text the log shows.
    expect([...request.body].every((byte) => byte < 0x80)).toBe(true)
    expect(request.body.toString('utf8')).toBe(entry.body)
    expect(request.json).toEqual(entry.event)
    expect(request.json).toMatchObject({
      event_type: 'transaction_settled',
      event_id: entry.eventId,
      merchant_id: 1234,
      client_id: 1234,
      data: { transaction_description: 'Crème brûlée ☕', settlement_code: 'FUNDED' },
    })
    // Stamped with the wall clock, not the manual clock (weeks behind it): the clock a receiver ages events by.
    expect(Math.abs(Date.parse(String(request.json?.created_at)) - Date.now())).toBeLessThan(60_000)
    expect(only(entry.deliveries)).toMatchObject({ state: 'delivered', firstAttemptTime: START })
    expect(only(only(entry.deliveries).attempts)).toMatchObject({ kind: 'scheduled', retry: 0, ok: true, status: 200 })
  })

  it('gives every emit a fresh event id and builds a message core accepts for each sample type', async () => {
    const handled: string[] = []
    const sandbox = sandboxOf()
    const types = [
      'merchant_activated_for_payment_type',
      'sale_created_from_batch',
      'transaction_settled',
      'transaction_returned',
    ]
    const receiver = await receiverOf(async (request) => {
      const secret = sandbox.subscriptions()[0]?.signature_secret as string
      // A receiver on its defaults: the manual clock started weeks before the wall clock it ages events by.
      const checked = createWebhooks({ secret, logger: { error: () => {} } }).onAny((event) => {
        handled.push(event.event_type)
      })
      const result = await checked.receive({
        body: request.body,
        getHeader: (name) => request.headers[name] as string | undefined,
      })
      return result.status
    })
    sandbox.subscribe({ url: receiver.url, eventTypes: types })
    const ids = new Set<string>()
    for (const type of types) {
      const entry = await sandbox.emit(type, undefined, { merchantId: 5678 })
      ids.add(entry.eventId)
      expect(entry.event.merchant_id).toBe(5678)
      expect(only(entry.deliveries).state).toBe('delivered')
    }
    expect(ids.size).toBe(types.length)
    expect(handled).toEqual(types)
  })

  it('uses the given event id and refuses to emit it twice', async () => {
    const sandbox = sandboxOf()
    const entry = await sandbox.emit('transaction_settled', undefined, { eventId: 'evt_fixed' })
    expect(entry.eventId).toBe('evt_fixed')
    expect(entry.event.event_id).toBe('evt_fixed')
    await expect(sandbox.emit('transaction_settled', undefined, { eventId: 'evt_fixed' })).rejects.toThrow(
      'emitted already',
    )
    await expect(sandbox.emit('')).rejects.toThrow('event_type')
  })
})

describe('sandbox scopes', () => {
  const options: SandboxOptions = {
    resellers: [
      { key: '1001|alpha', merchantIds: [1, 2] },
      { key: '2002|beta', merchantIds: [3] },
    ],
    merchants: [
      { id: 1, username: 'm1', apiKey: 'k1' },
      { id: 3, username: 'm3', apiKey: 'k3' },
    ],
  }

  it('delivers to reseller-scoped subscriptions for all their merchants and merchant-scoped ones for their own', async () => {
    const sandbox = sandboxOf(options)
    const alpha = await receiverOf()
    const beta = await receiverOf()
    const merchant1 = await receiverOf()
    const inactive = await receiverOf()
    const otherType = await receiverOf()
    sandbox.subscribe({ url: alpha.url, eventTypes: ['transaction_settled'], resellerKey: '1001|alpha' })
    sandbox.subscribe({ url: beta.url, eventTypes: ['transaction_settled'], resellerKey: '2002|beta' })
    sandbox.subscribe({ url: merchant1.url, eventTypes: ['transaction_settled'], merchantId: 1 })
    sandbox.subscribe({ url: inactive.url, eventTypes: ['transaction_settled'], merchantId: 1, isActive: false })
    sandbox.subscribe({ url: otherType.url, eventTypes: ['transaction_returned'], merchantId: 1 })

    for (const merchantId of [1, 2, 3, 4]) await sandbox.emit('transaction_settled', undefined, { merchantId })

    const merchants = (receiver: Receiver) => receiver.requests.map((r) => r.json?.merchant_id)
    expect(merchants(alpha)).toEqual([1, 2])
    expect(merchants(beta)).toEqual([3])
    expect(merchants(merchant1)).toEqual([1])
    expect(inactive.requests).toHaveLength(0)
    expect(otherType.requests).toHaveLength(0)
    expect(sandbox.log().map((e) => e.deliveries.length)).toEqual([2, 1, 1, 0])
  })

  it('sends merchant_activated_for_payment_type to reseller-scoped subscriptions only', async () => {
    const sandbox = sandboxOf(options)
    const reseller = await receiverOf()
    const merchant = await receiverOf()
    const type = 'merchant_activated_for_payment_type'
    sandbox.subscribe({ url: reseller.url, eventTypes: [type] })
    sandbox.subscribe({ url: merchant.url, eventTypes: [type], merchantId: 1 })
    await sandbox.emit(type, undefined, { merchantId: 1 })
    expect(reseller.requests.map((r) => r.json?.client_id)).toEqual(['1'])
    expect(merchant.requests).toHaveLength(0)
  })
})

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
    const port = await unusedPort()
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

describe('sandbox chaos', () => {
  async function chaosRun(seed: number) {
    const sandbox = sandboxOf({ chaos: { seed, duplicateRate: 0.3, reorderRate: 0.5, maxDelayMs: 1000 } })
    const receiver = await receiverOf()
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const emitted: string[] = []
    for (let i = 0; i < 40; i++) emitted.push((await sandbox.emit('transaction_settled')).eventId)
    await sandbox.advance(2000)
    const shape = (entry: SandboxLogEntry) =>
      entry.deliveries.flatMap((d) => d.attempts.map((a) => `${a.kind}@${a.time - entry.emittedTime}`)).join(',')
    return { sandbox, receiver, emitted, shapes: sandbox.log().map(shape) }
  }

  it('duplicates and reorders deliveries, the same way for the same seed', async () => {
    const first = await chaosRun(7)
    const again = await chaosRun(7)
    const other = await chaosRun(8)
    expect(again.shapes).toEqual(first.shapes)
    expect(other.shapes).not.toEqual(first.shapes)

    const arrived = first.receiver.requests.map((r) => r.json?.event_id as string)
    // Every event arrived, some twice, and not in the order they were emitted.
    expect(new Set(arrived)).toEqual(new Set(first.emitted))
    expect(arrived.length).toBeGreaterThan(first.emitted.length)
    const firstArrivals = arrived.filter((id, index) => arrived.indexOf(id) === index)
    expect(firstArrivals).not.toEqual(first.emitted)

    const log = first.sandbox.log()
    const attempts = log.flatMap((e) => e.deliveries.flatMap((d) => d.attempts.map((a) => ({ ...a, entry: e, d }))))
    const duplicates = attempts.filter((a) => a.kind === 'duplicate')
    expect(duplicates.length).toBe(arrived.length - first.emitted.length)
    // Some copies went out together with the first send, some later.
    expect(duplicates.some((a) => a.time === a.d.firstAttemptTime)).toBe(true)
    expect(duplicates.some((a) => a.time > a.d.firstAttemptTime)).toBe(true)
    // Delays stay within maxDelayMs, so the hourly grid is unchanged.
    for (const entry of log) {
      for (const delivery of entry.deliveries) {
        expect(delivery.state).toBe('delivered')
        expect(delivery.firstAttemptTime - entry.emittedTime).toBeLessThanOrEqual(1000)
      }
    }
  })

  it('is off by default, and exposes the seed when on', () => {
    expect(sandboxOf().chaos).toBeUndefined()
    const chaos = sandboxOf({ chaos: true }).chaos
    expect(chaos).toMatchObject({ duplicateRate: 0.2, reorderRate: 0.3, maxDelayMs: 2000 })
    expect(Number.isInteger(chaos?.seed)).toBe(true)
    expect(() => createSandbox({ chaos: { maxDelayMs: HOUR } })).toThrow(RangeError)
  })
})

describe('sandbox lifecycle', () => {
  it('refuses to advance a real clock', async () => {
    const sandbox = createSandbox()
    cleanup.push(() => sandbox.close())
    await expect(sandbox.advance(1)).rejects.toThrow('real clock')
  })

  it('stops pending retries on close and refuses new emits', async () => {
    const sandbox = sandboxOf()
    const receiver = await receiverOf(() => 500)
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    await sandbox.emit('transaction_settled')
    await sandbox.close()
    await sandbox.close()
    await sandbox.advance(5 * HOUR)
    expect(receiver.requests).toHaveLength(1)
    await expect(sandbox.emit('transaction_settled')).rejects.toThrow('closed')
  })

  it('waits for chaos-delayed sends on a real clock with idle()', async () => {
    const sandbox = createSandbox({ chaos: { seed: 3, reorderRate: 1, duplicateRate: 0, maxDelayMs: 30 } })
    cleanup.push(() => sandbox.close())
    const receiver = await receiverOf()
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const entries = await Promise.all([1, 2, 3].map(() => sandbox.emit('transaction_settled')))
    // reorderRate 1: every first send is delayed, so nothing went out during emit.
    expect(entries.every((e) => only(e.deliveries).attempts.length === 0)).toBe(true)
    await sandbox.idle()
    expect(receiver.requests).toHaveLength(3)
    expect(sandbox.log().every((e) => only(e.deliveries).state === 'delivered')).toBe(true)
  })

  it('validates its options', () => {
    expect(() => createSandbox({ resellers: [{ key: 'no-pipe', merchantIds: [] }] })).toThrow('reseller key')
    expect(() => createSandbox({ merchants: [{ id: 1, username: 'a:b', apiKey: 'k' }] })).toThrow('merchant')
    expect(() => createSandbox({ deliveryTimeoutMs: 0 })).toThrow(RangeError)
  })
})
