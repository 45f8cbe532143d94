// The sandbox's service endpoints (spec section 4) and authorization rules (section 5), over real
// HTTP on 127.0.0.1 with plain fetch.
import { createHmac } from 'node:crypto'
import { SIGNATURE_HEADER, verify } from '@payhooks/core'
import { createManualClock, createSandbox, type Sandbox } from '@payhooks/sandbox'
import { samples } from '@payhooks/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { call, type Receiver, startReceiver, unusedPort } from '../fixtures/sandbox-receivers.js'

const START = Date.parse('2026-11-02T15:00:00Z')
const HOUR = 3_600_000
const RESELLER = 'reseller 1001|alpha-key'
const OTHER_RESELLER = 'reseller 2002|beta-key'
const MERCHANT_1 = 'basic m1:key-1'
const MERCHANT_2 = 'basic m2:key-2'
const MERCHANT_3 = 'basic m3:key-3'

let sandbox: Sandbox
let base: string
let receiver: Receiver
let status = 200

beforeAll(async () => {
  sandbox = createSandbox({
    clock: createManualClock({ start: START }),
    resellers: [
      { key: '1001|alpha-key', merchantIds: [1, 2] },
      { key: '2002|beta-key', merchantIds: [3] },
    ],
    merchants: [
      { id: 1, username: 'm1', apiKey: 'key-1' },
      { id: 2, username: 'm2', apiKey: 'key-2' },
      { id: 3, username: 'm3', apiKey: 'key-3' },
    ],
    testSecret: 'test-secret-for-unknown-urls',
  })
  base = (await sandbox.listen()).url
  receiver = await startReceiver(() => status)
})

afterAll(async () => {
  await sandbox.close()
  await receiver.close()
})

const subscription = (overrides: Record<string, unknown> = {}) => ({
  url: receiver.url,
  event_types: ['transaction_settled'],
  is_active: true,
  ...overrides,
})

async function create(auth: string, merchantId?: number, body: unknown = subscription()) {
  const response = await call(base, 'POST', '/ps/webhook/subscription', { auth, merchantId, body })
  expect(response.status).toBe(200)
  return response.json.data as { id: string; signature_secret: string }
}

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
    const port = await unusedPort()
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
