import { createWebhooks, SIGNATURE_HEADER, verify } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import type { SandboxOptions } from './options.js'
import type { Receiver } from './test-receivers.js'
import { closeAll, only, receiverOf, START, sandboxOf } from './test-sandbox.js'

afterEach(closeAll)

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
