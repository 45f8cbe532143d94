// The sandbox's subscription endpoints (spec section 4) and authorization rules (section 5), over real
// HTTP on 127.0.0.1 with plain fetch.
import { describe, expect, it } from 'vitest'
import {
  base,
  create,
  MERCHANT_1,
  MERCHANT_2,
  OTHER_RESELLER,
  RESELLER,
  receiver,
  subscription,
  useSandbox,
} from '../fixtures/sandbox-api.js'
import { call } from '../fixtures/sandbox-receivers.js'

useSandbox()

describe('subscription endpoints', () => {
  it('creates, reads, lists, updates and deletes with the response shapes of the spec', async () => {
    const created = await call(base, 'POST', '/ps/webhook/subscription', { auth: RESELLER, body: subscription() })
    expect(created.status).toBe(200)
    expect(Object.keys(created.json)).toEqual(['data'])
    expect(Object.keys(created.json.data).sort()).toEqual(['id', 'signature_secret'])
    const { id, signature_secret } = created.json.data
    expect(id).toMatch(/^wsub_[0-9a-f]{24}$/)
    expect(signature_secret.length).toBeGreaterThanOrEqual(32)

    const read = await call(base, 'GET', `/ps/webhook/subscription/${id}`, { auth: RESELLER })
    expect(read.status).toBe(200)
    expect(read.json).toEqual({
      data: { id, url: receiver.url, event_types: ['transaction_settled'], is_active: true, signature_secret },
    })

    const updated = await call(base, 'PUT', `/ps/webhook/subscription/${id}`, {
      auth: RESELLER,
      body: {
        url: `${receiver.url}/v2`,
        event_types: ['transaction_settled', 'transaction_returned'],
        is_active: false,
      },
    })
    expect(updated.status).toBe(204)
    expect(updated.text).toBe('')
    const afterUpdate = await call(base, 'GET', `/ps/webhook/subscription/${id}`, { auth: RESELLER })
    expect(afterUpdate.json.data).toEqual({
      id,
      url: `${receiver.url}/v2`,
      event_types: ['transaction_settled', 'transaction_returned'],
      is_active: false,
      signature_secret,
    })

    const listed = await call(base, 'GET', '/ps/webhook/subscriptions', { auth: RESELLER })
    expect(listed.status).toBe(200)
    expect(listed.json.total_item_count).toBe(listed.json.data.length)
    expect(listed.json.data).toContainEqual(afterUpdate.json.data)

    const deleted = await call(base, 'DELETE', `/ps/webhook/subscription/${id}`, { auth: RESELLER })
    expect(deleted.status).toBe(204)
    expect(deleted.text).toBe('')
    expect((await call(base, 'GET', `/ps/webhook/subscription/${id}`, { auth: RESELLER })).status).toBe(404)
    const relisted = await call(base, 'GET', '/ps/webhook/subscriptions', { auth: RESELLER })
    expect(relisted.json.data.map((s: { id: string }) => s.id)).not.toContain(id)
  })

  it('keeps is_active as sent on create and changes only the fields sent on update', async () => {
    const { id } = await create(MERCHANT_2, undefined, subscription({ is_active: false }))
    const get = async () => (await call(base, 'GET', `/ps/webhook/subscription/${id}`, { auth: MERCHANT_2 })).json.data
    expect((await get()).is_active).toBe(false)
    expect(
      (await call(base, 'PUT', `/ps/webhook/subscription/${id}`, { auth: MERCHANT_2, body: { is_active: true } }))
        .status,
    ).toBe(204)
    expect(await get()).toMatchObject({ is_active: true, url: receiver.url, event_types: ['transaction_settled'] })
  })

  it('answers 400 with { error: { message } } for invalid bodies', async () => {
    const { id } = await create(RESELLER)
    const invalid: [string, string, unknown][] = [
      ['POST', '/ps/webhook/subscription', 'not json'],
      ['POST', '/ps/webhook/subscription', [subscription()]],
      ['POST', '/ps/webhook/subscription', { event_types: ['transaction_settled'], is_active: true }],
      ['POST', '/ps/webhook/subscription', subscription({ url: 'ftp://example.com/hook' })],
      ['POST', '/ps/webhook/subscription', subscription({ url: '/relative' })],
      ['POST', '/ps/webhook/subscription', subscription({ event_types: [] })],
      ['POST', '/ps/webhook/subscription', subscription({ event_types: 'transaction_settled' })],
      ['POST', '/ps/webhook/subscription', subscription({ event_types: [''] })],
      ['POST', '/ps/webhook/subscription', subscription({ is_active: 'yes' })],
      ['POST', '/ps/webhook/subscription', subscription({ signature_secret: 'mine' })],
      ['PUT', `/ps/webhook/subscription/${id}`, {}],
      ['PUT', `/ps/webhook/subscription/${id}`, { is_active: 1 }],
      ['PUT', '/ps/webhook/manually_resend_webhooks', { ids: [] }],
      ['PUT', '/ps/webhook/manually_resend_webhooks', { ids: [42] }],
      ['POST', '/ps/webhook/subscription/test', { url: receiver.url }],
      ['POST', '/ps/webhook/subscription/test', { url: 'nope', event_type: 'transaction_settled' }],
    ]
    for (const [method, path, body] of invalid) {
      const response = await call(base, method, path, { auth: RESELLER, body })
      expect({ method, path, body, status: response.status }).toEqual({ method, path, body, status: 400 })
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(Object.keys(response.json)).toEqual(['error'])
      expect(typeof response.json.error.message).toBe('string')
    }
  })

  it('answers 404 for unknown ids and routes, 405 for other methods', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const response = await call(base, method, '/ps/webhook/subscription/wsub_unknown', {
        auth: RESELLER,
        body: method === 'PUT' ? { is_active: true } : undefined,
      })
      expect(response.status).toBe(404)
      expect(response.json.error.message).toContain('wsub_unknown')
    }
    expect((await call(base, 'GET', '/ps/webhook/nothing', { auth: RESELLER })).status).toBe(404)
    const wrong = await call(base, 'DELETE', '/ps/webhook/subscriptions', { auth: RESELLER })
    expect(wrong.status).toBe(405)
    expect(wrong.headers.get('allow')).toBe('GET')
  })
})

describe('authorization (spec section 5)', () => {
  const list = (auth?: string, merchantId?: string | number) =>
    call(base, 'GET', '/ps/webhook/subscriptions', { ...(auth === undefined ? {} : { auth }), merchantId })

  it('accepts a reseller key and plain (not base 64) merchant credentials', async () => {
    expect((await list(RESELLER)).status).toBe(200)
    expect((await list('Reseller 1001|alpha-key')).status).toBe(200)
    expect((await list(RESELLER, 2)).status).toBe(200)
    expect((await list(MERCHANT_1)).status).toBe(200)
    expect((await list('Basic m1:key-1')).status).toBe(200)
    expect((await list(MERCHANT_1, 1)).status).toBe(200)
  })

  it('answers 401 for missing or bad credentials, before looking at the body', async () => {
    const cases: (string | undefined)[] = [
      undefined,
      '',
      'reseller',
      'reseller 1001',
      'reseller alpha|1001',
      'reseller 1001|wrong-key',
      'reseller  1001|alpha-key',
      'Bearer 1001|alpha-key',
      'basic m1',
      'basic m1:wrong',
      'basic unknown:key-1',
      `basic ${Buffer.from('m1:key-1').toString('base64')}`,
    ]
    for (const auth of cases) {
      const response = await list(auth)
      expect({ auth, status: response.status }).toEqual({ auth, status: 401 })
      expect(typeof response.json.error.message).toBe('string')
    }
    const invalidBody = await call(base, 'POST', '/ps/webhook/subscription', { auth: 'basic m1:wrong', body: 'x' })
    expect(invalidBody.status).toBe(401)
    const base64 = await list(`Basic ${Buffer.from('m1:key-1').toString('base64')}`)
    expect(base64.json.error.message).toContain('not base 64')
  })

  it('checks Service-Merchant-Id: numeric (400), and a merchant of the caller (403)', async () => {
    expect((await list(RESELLER, 'abc')).status).toBe(400)
    expect((await list(RESELLER, '-1')).status).toBe(400)
    const outside = await list(RESELLER, 3)
    expect(outside.status).toBe(403)
    expect(outside.json.error.message).toContain('3')
    expect((await list(OTHER_RESELLER, 1)).status).toBe(403)
    expect((await list(MERCHANT_1, 2)).status).toBe(403)
    expect((await list(OTHER_RESELLER, 3)).status).toBe(200)
  })

  it('shows a subscription to its owner scope only', async () => {
    const resellerScoped = await create(RESELLER)
    const viaHeader = await create(RESELLER, 1)
    const viaBasic = await create(MERCHANT_1)
    const ids = async (auth: string, merchantId?: number) =>
      ((await list(auth, merchantId)).json.data as { id: string }[]).map((s) => s.id)

    // Merchant 1's context is the same whether the reseller acts for it or it calls itself.
    for (const [auth, merchantId] of [
      [MERCHANT_1, undefined],
      [RESELLER, 1],
    ] as const) {
      const visible = await ids(auth, merchantId)
      expect(visible).toEqual(expect.arrayContaining([viaHeader.id, viaBasic.id]))
      expect(visible).not.toContain(resellerScoped.id)
      const read = await call(base, 'GET', `/ps/webhook/subscription/${resellerScoped.id}`, { auth, merchantId })
      expect(read.status).toBe(404)
    }
    const resellerView = await ids(RESELLER)
    expect(resellerView).toContain(resellerScoped.id)
    expect(resellerView).not.toContain(viaHeader.id)
    expect(resellerView).not.toContain(viaBasic.id)
    for (const [auth, merchantId] of [[MERCHANT_2], [OTHER_RESELLER], [RESELLER, 2]] as const) {
      const visible = await ids(auth, merchantId)
      for (const id of [resellerScoped.id, viaHeader.id, viaBasic.id]) expect(visible).not.toContain(id)
      const denied = await call(base, 'DELETE', `/ps/webhook/subscription/${viaBasic.id}`, { auth, merchantId })
      expect(denied.status).toBe(404)
    }
    expect(
      (await call(base, 'DELETE', `/ps/webhook/subscription/${viaBasic.id}`, { auth: RESELLER, merchantId: 1 })).status,
    ).toBe(204)
  })
})
