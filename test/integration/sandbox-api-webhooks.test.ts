// The sandbox's other service endpoints (spec section 4): manual resend, the test webhook and the client token,
// over real HTTP on 127.0.0.1 with plain fetch.
import { createHmac } from 'node:crypto'
import { SIGNATURE_HEADER, verify } from '@payhooks/core'
import { samples } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import {
  base,
  create,
  HOUR,
  MERCHANT_1,
  MERCHANT_2,
  MERCHANT_3,
  OTHER_RESELLER,
  RESELLER,
  receiver,
  sandbox,
  subscription,
  useSandbox,
} from '../fixtures/sandbox-api.js'
import { call, REFUSING_PORT, startReceiver } from '../fixtures/sandbox-receivers.js'

useSandbox()

describe('manually_resend_webhooks', () => {
  it('resends events delivered to the caller’s subscriptions, by event id', async () => {
    const isolated = await startReceiver()
    try {
      await create(MERCHANT_3, undefined, subscription({ url: isolated.url, event_types: ['sale_created_from_batch'] }))
      const { eventId } = await sandbox.emit('sale_created_from_batch', undefined, { merchantId: 3 })
      expect(isolated.requests).toHaveLength(1)

      const response = await call(base, 'PUT', '/ps/webhook/manually_resend_webhooks', {
        auth: MERCHANT_3,
        body: { ids: [eventId] },
      })
      expect(response.status).toBe(204)
      expect(response.text).toBe('')
      expect(isolated.requests).toHaveLength(2)
      expect(isolated.requests[1]?.body.equals(isolated.requests[0]?.body as Buffer)).toBe(true)
      expect(sandbox.deliveries(eventId)[0]?.attempts.map((a) => a.kind)).toEqual(['scheduled', 'resend'])

      // Another scope does not see the event; unknown ids are 404 and nothing is sent.
      for (const [auth, merchantId, ids] of [
        [MERCHANT_1, undefined, [eventId]],
        [OTHER_RESELLER, undefined, [eventId]],
        [MERCHANT_3, undefined, [eventId, 'evt_unknown']],
      ] as const) {
        const denied = await call(base, 'PUT', '/ps/webhook/manually_resend_webhooks', {
          auth,
          merchantId,
          body: { ids },
        })
        expect(denied.status).toBe(404)
      }
      expect(isolated.requests).toHaveLength(2)
      // The reseller acting for merchant 3 is in merchant 3's context.
      const asReseller = await call(base, 'PUT', '/ps/webhook/manually_resend_webhooks', {
        auth: OTHER_RESELLER,
        merchantId: 3,
        body: { ids: [eventId] },
      })
      expect(asReseller.status).toBe(204)
      expect(isolated.requests).toHaveLength(3)
    } finally {
      await isolated.close()
    }
  })
})

describe('send test webhook', () => {
  const test = (auth: string, body: unknown, merchantId?: number) =>
    call(base, 'POST', '/ps/webhook/subscription/test', { auth, merchantId, body })

  it('sends one static sample to the url and reports the status it got', async () => {
    const target = await startReceiver(() => 418)
    try {
      const response = await test(MERCHANT_2, { url: target.url, event_type: 'transaction_settled' })
      expect(response.status).toBe(200)
      expect(response.json).toEqual({ data: { status_code: 418 } })
      const request = target.requests[0]
      expect(target.requests).toHaveLength(1)
      const { event_id: _sampleId, created_at: _sampleTime, ...sample } = samples.transaction_settled
      expect(request?.json).toMatchObject({
        ...sample,
        merchant_id: 2,
        client_id: 2,
        data: { ...sample.data, transaction_id: expect.any(String), transaction_external_id: expect.any(String) },
      })
      // The wall clock's now (the manual clock is weeks behind): neither taken for a replay nor from the future.
      expect(Math.abs(Date.parse(String(request?.json?.created_at)) - Date.now())).toBeLessThan(60_000)
      expect(request?.json?.event_id).toMatch(/^evt_test_[0-9a-f-]{36}$/)
      // No subscription of the caller uses this url: signed with the sandbox test secret.
      expect(
        await verify(
          'test-secret-for-unknown-urls',
          request?.body as Buffer,
          request?.headers[SIGNATURE_HEADER] as string,
        ),
      ).toBe(true)

      // With a subscription of the caller on that url, its secret signs the test message.
      const { signature_secret } = await create(MERCHANT_2, undefined, subscription({ url: target.url }))
      await test(MERCHANT_2, { url: target.url, event_type: 'payment_created' })
      const second = target.requests[1]
      expect(second?.json).toMatchObject({ event_type: 'payment_created', merchant_id: 2, data: {} })
      // Each test message is a new event, not a duplicate of the previous test.
      expect(second?.json?.event_id).not.toBe(request?.json?.event_id)
      expect(await verify(signature_secret, second?.body as Buffer, second?.headers[SIGNATURE_HEADER] as string)).toBe(
        true,
      )
      // The same url seen by another scope still gets the test secret.
      await test(RESELLER, { url: target.url, event_type: 'transaction_settled' })
      const third = target.requests[2]
      expect(
        await verify('test-secret-for-unknown-urls', third?.body as Buffer, third?.headers[SIGNATURE_HEADER] as string),
      ).toBe(true)
    } finally {
      await target.close()
    }
  })

  it('tests merchant_activated_for_payment_type with reseller authorization and no merchant header only', async () => {
    const type = 'merchant_activated_for_payment_type'
    expect((await test(MERCHANT_1, { url: receiver.url, event_type: type })).status).toBe(403)
    expect((await test(RESELLER, { url: receiver.url, event_type: type }, 1)).status).toBe(403)
    const allowed = await test(RESELLER, { url: receiver.url, event_type: type })
    expect(allowed.json).toEqual({ data: { status_code: 200 } })
  })

  it('answers 502 with a fixed message when the url does not answer, never the network error', async () => {
    const port = REFUSING_PORT
    const response = await test(RESELLER, { url: `http://127.0.0.1:${port}/x`, event_type: 'transaction_settled' })
    expect(response.status).toBe(502)
    expect(response.json).toEqual({ error: { message: 'test webhook: the target did not answer' } })
  })
})

describe('client token', () => {
  const token = (auth: string, body: unknown, merchantId?: number) =>
    call(base, 'POST', '/ps/auth/reseller_client_token', { auth, merchantId, body })

  it('returns a JWT-shaped token and its ISO 8601 UTC expiry one hour ahead', async () => {
    const response = await token(RESELLER, { client_id: 2, api_key: '1001|alpha-key' })
    expect(response.status).toBe(200)
    expect(Object.keys(response.json.data).sort()).toEqual(['expires', 'token'])
    const { token: jwt, expires } = response.json.data
    const parts = jwt.split('.')
    expect(parts).toHaveLength(3)
    for (const part of parts) expect(part).toMatch(/^[A-Za-z0-9_-]+$/)
    const decode = (part: string) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8'))
    expect(decode(parts[0])).toEqual({ alg: 'HS256', typ: 'JWT' })
    const claims = decode(parts[1])
    expect(claims.sub).toBe('2')
    expect(claims.exp - claims.iat).toBe(3600)
    expect(expires).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/)
    expect(Date.parse(expires)).toBe(sandbox.clock.now() + HOUR)
    // Signed: the signature is an HMAC-SHA256 (32 bytes), not a placeholder.
    expect(Buffer.from(parts[2], 'base64url')).toHaveLength(32)
    expect(parts[2]).not.toBe(createHmac('sha256', '').update(`${parts[0]}.${parts[1]}`).digest('base64url'))
    // A numeric string client_id is the same merchant.
    expect((await token(RESELLER, { client_id: '1', api_key: '1001|alpha-key' })).status).toBe(200)
  })

  it('needs the reseller key, matching api_key, and a merchant of that reseller', async () => {
    expect((await token(MERCHANT_1, { client_id: 1, api_key: '1001|alpha-key' })).status).toBe(403)
    expect((await token(RESELLER, { client_id: 1, api_key: '2002|beta-key' })).status).toBe(401)
    expect((await token(RESELLER, { client_id: 3, api_key: '1001|alpha-key' })).status).toBe(403)
    expect((await token(RESELLER, { api_key: '1001|alpha-key' })).status).toBe(400)
    expect((await token(RESELLER, { client_id: 'one', api_key: '1001|alpha-key' })).status).toBe(400)
    expect((await token(RESELLER, { client_id: 1 })).status).toBe(400)
    expect((await token('reseller 1001|nope', { client_id: 1, api_key: '1001|nope' })).status).toBe(401)
  })
})
