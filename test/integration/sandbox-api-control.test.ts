// The sandbox's control routes (/_sandbox: emit, clock, log, resend, credentials), over real HTTP on 127.0.0.1
// with plain fetch.
import { SIGNATURE_HEADER, verify } from '@payhooks/core'
import { createSandbox } from '@payhooks/sandbox'
import { describe, expect, it } from 'vitest'
import { base, create, HOUR, RESELLER, receiver, sandbox, subscription, useSandbox } from '../fixtures/sandbox-api.js'
import { call, startReceiver } from '../fixtures/sandbox-receivers.js'

let status = 200
useSandbox(() => status)

describe('control routes (/_sandbox)', () => {
  it('emits over HTTP, delivers with the retry schedule, and shows the log', async () => {
    const target = await startReceiver(() => status)
    try {
      const { signature_secret } = await create(
        RESELLER,
        2,
        subscription({ url: target.url, event_types: ['transaction_returned'] }),
      )
      status = 500
      const emitted = await call(base, 'POST', '/_sandbox/emit', {
        body: { event_type: 'transaction_returned', merchant_id: 2, data: { settlement_code: 'R02' } },
      })
      expect(emitted.status).toBe(200)
      const entry = emitted.json.data
      expect(entry.event).toMatchObject({ event_type: 'transaction_returned', merchant_id: 2 })
      expect(entry.event.data.settlement_code).toBe('R02')
      expect(entry.deliveries).toHaveLength(1)
      expect(entry.deliveries[0].attempts[0]).toMatchObject({ kind: 'scheduled', status: 500, ok: false })
      const request = target.requests[0]
      expect(
        await verify(signature_secret, request?.body as Buffer, request?.headers[SIGNATURE_HEADER] as string),
      ).toBe(true)

      status = 200
      const advanced = await call(base, 'POST', '/_sandbox/clock/advance', { body: { ms: HOUR } })
      expect(advanced.status).toBe(200)
      expect(advanced.json.data.now).toBe(new Date(sandbox.clock.now()).toISOString())
      expect(target.requests).toHaveLength(2)

      const one = await call(base, 'GET', `/_sandbox/log/${entry.eventId}`)
      expect(one.status).toBe(200)
      expect(one.json.data.deliveries[0].state).toBe('delivered')
      expect(one.json.data.deliveries[0].attempts.map((a: { retry: number }) => a.retry)).toEqual([0, 1])
      const all = await call(base, 'GET', '/_sandbox/log')
      expect(all.json.total_item_count).toBe(all.json.data.length)
      expect(all.json.data.map((e: { eventId: string }) => e.eventId)).toContain(entry.eventId)
    } finally {
      status = 200
      await target.close()
    }
  })

  it('says so when an emit reaches no subscription: deliveries 0 and a warning', async () => {
    const matched = await create(RESELLER, 1, subscription({ event_types: ['payment_created'] }))
    try {
      const delivered = await call(base, 'POST', '/_sandbox/emit', {
        body: { event_type: 'payment_created', merchant_id: 1 },
      })
      expect([delivered.status, delivered.json.deliveries, delivered.json.warning]).toEqual([200, 1, undefined])

      const unknownMerchant = await call(base, 'POST', '/_sandbox/emit', {
        body: { event_type: 'payment_created', merchant_id: 9999 },
      })
      expect(unknownMerchant.status).toBe(200)
      expect(unknownMerchant.json.deliveries).toBe(0)
      expect(unknownMerchant.json.data.deliveries).toEqual([])
      expect(unknownMerchant.json.warning).toMatch(/^merchant 9999 is no merchant of the sandbox's accounts/)

      const otherType = await call(base, 'POST', '/_sandbox/emit', {
        body: { event_type: 'payment_created', merchant_id: 2 },
      })
      expect(otherType.json.deliveries).toBe(0)
      expect(otherType.json.warning).toBe(
        'no active subscription gets payment_created events of merchant 2: the event is logged but was sent nowhere',
      )
    } finally {
      await call(base, 'DELETE', `/ps/webhook/subscription/${matched.id}`, { auth: RESELLER, merchantId: 1 })
    }
  })

  it('resends an event to every subscription it was delivered to, and 404s unknown ids', async () => {
    const before = receiver.requests.length
    const { id } = await create(RESELLER, 1, subscription({ event_types: ['payment_created'] }))
    try {
      const { eventId } = await sandbox.emit('payment_created', undefined, { merchantId: 1 })
      const resent = await call(base, 'POST', '/_sandbox/resend', { body: { ids: [eventId, eventId] } })
      expect([resent.status, resent.json]).toEqual([200, { data: { sends: 1 } }])
      expect(receiver.requests.length - before).toBe(2)
      expect(sandbox.deliveries(eventId)[0]?.attempts.map((a) => a.kind)).toEqual(['scheduled', 'resend'])
      const unknown = await call(base, 'POST', '/_sandbox/resend', { body: { ids: [eventId, 'evt_nope'] } })
      expect([unknown.status, unknown.json.error.message]).toEqual([404, 'no delivered event with id evt_nope'])
      expect((await call(base, 'POST', '/_sandbox/resend', { body: { ids: [] } })).status).toBe(400)
    } finally {
      await call(base, 'DELETE', `/ps/webhook/subscription/${id}`, { auth: RESELLER, merchantId: 1 })
    }
  })

  it('validates control requests and exposes the credentials', async () => {
    expect((await call(base, 'GET', '/_sandbox/log/evt_missing')).status).toBe(404)
    expect((await call(base, 'POST', '/_sandbox/emit', { body: { data: {} } })).status).toBe(400)
    expect((await call(base, 'POST', '/_sandbox/emit', { body: { event_type: 'x', merchant_id: 'abc' } })).status).toBe(
      400,
    )
    expect((await call(base, 'POST', '/_sandbox/emit', { body: { event_type: 'x', data: [1] } })).status).toBe(400)
    expect((await call(base, 'POST', '/_sandbox/clock/advance', { body: { ms: -5 } })).status).toBe(400)
    const credentials = await call(base, 'GET', '/_sandbox/credentials')
    expect(credentials.json.data.resellers[0]).toEqual({ key: '1001|alpha-key', merchantIds: [1, 2] })
    expect(credentials.json.data.testSecret).toBe('test-secret-for-unknown-urls')
  })

  it('refuses to advance a real clock', async () => {
    const real = createSandbox()
    try {
      const { url } = await real.listen()
      const response = await call(url, 'POST', '/_sandbox/clock/advance', { body: { ms: 1 } })
      expect(response.status).toBe(409)
    } finally {
      await real.close()
    }
  })

  it('listens on the default credentials when given none', async () => {
    const plain = createSandbox()
    try {
      const { url } = await plain.listen(0)
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(plain.url).toBe(url)
      const [reseller] = plain.credentials.resellers
      const [merchant] = plain.credentials.merchants
      expect((await call(url, 'GET', '/ps/webhook/subscriptions', { auth: `reseller ${reseller?.key}` })).status).toBe(
        200,
      )
      const basic = `basic ${merchant?.username}:${merchant?.apiKey}`
      expect((await call(url, 'GET', '/ps/webhook/subscriptions', { auth: basic })).json).toEqual({
        total_item_count: 0,
        data: [],
      })
    } finally {
      await plain.close()
    }
  })
})
