// The client's calls against a recording server on 127.0.0.1: the authorization headers each scheme sends, and
// each subscription, webhook and auth call's method, path, body and answer.
import { createClient, InvalidRequestError, InvalidResponseError } from '@payhooks/client'
import { describe, expect, it } from 'vitest'
import {
  API_KEY,
  input,
  merchant,
  onlyRequest,
  RESELLER_KEY,
  reseller,
  resellerWide,
  server,
  subscription,
  USERNAME,
  useRecordingServer,
} from '../fixtures/client-api.js'
import { rawHeader } from '../fixtures/client-recording-server.js'

useRecordingServer()

describe('authorization headers', () => {
  it('sends the reseller key as `reseller <key>` and the merchant id header when asked', async () => {
    server.respond(() => ({ status: 200, body: { total_item_count: 0, data: [] } }))
    await reseller(1234).subscriptions.list()
    const request = onlyRequest()
    expect(rawHeader(request, 'authorization')).toEqual([`reseller ${RESELLER_KEY}`])
    expect(rawHeader(request, 'service-merchant-id')).toEqual(['1234'])
  })

  it('sends merchant credentials as `basic <username>:<key>`, not base 64, with no merchant id header', async () => {
    server.respond(() => ({ status: 200, body: { total_item_count: 0, data: [] } }))
    await merchant().subscriptions.list()
    const request = onlyRequest()
    expect(rawHeader(request, 'authorization')).toEqual([`basic ${USERNAME}:${API_KEY}`])
    expect(rawHeader(request, 'service-merchant-id')).toEqual([])
  })

  it('adds the merchant id header through forMerchant, and accepts a numeric string', async () => {
    server.respond(() => ({ status: 200, body: { total_item_count: 0, data: [] } }))
    const client = resellerWide()
    await client.forMerchant('77').subscriptions.list()
    await client.subscriptions.list()
    expect(server.requests.map((r) => rawHeader(r, 'service-merchant-id'))).toEqual([['77'], []])
  })

  it.each([
    ['no pipe', '42s3cr3t'],
    ['letters before the pipe', 'ab|s3cr3t'],
    ['nothing after the pipe', '42|'],
    ['a trailing newline', `${RESELLER_KEY}\n`],
    ['a space inside', '42|abc def'],
    ['empty', ''],
  ])('rejects a reseller key with %s before anything is sent, without quoting it', (_, key) => {
    let error: unknown
    try {
      createClient({ baseUrl: server.url, auth: { resellerKey: key }, merchantId: 1 })
    } catch (caught) {
      error = caught
    }
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toMatch(/resellerKey must be digits, a "\|", then a string/)
    if (key.length > 3) expect((error as Error).message).not.toContain(key.trim())
    expect(server.requests).toHaveLength(0)
  })

  it('rejects both schemes at once and a username with a colon', () => {
    const both = { resellerKey: RESELLER_KEY, username: USERNAME, apiKey: API_KEY }
    // @ts-expect-error: the two schemes exclude each other
    expect(() => createClient({ baseUrl: server.url, auth: both })).toThrow(/not both/)
    expect(() => createClient({ baseUrl: server.url, auth: { username: 'a:b', apiKey: API_KEY } })).toThrow(
      /username must be/,
    )
  })
})

describe('subscriptions', () => {
  it('create: POSTs the three fields as JSON and returns id and signature_secret, extra fields kept', async () => {
    server.respond(() => ({
      status: 200,
      body: { data: { id: 'whs_new', signature_secret: 'whsec_new', created: '2026-01-01' } },
    }))
    const created = await reseller(1234).subscriptions.create({ ...input, id: 'ignored', signature_secret: 'x' })
    expect(created).toEqual({ id: 'whs_new', signature_secret: 'whsec_new', created: '2026-01-01' })
    const request = onlyRequest()
    expect(request.method).toBe('POST')
    expect(request.path).toBe('/ps/webhook/subscription')
    expect(request.headers['content-type']).toBe('application/json')
    expect(JSON.parse(request.body)).toEqual(input)
  })

  it('create with a reseller key and no merchant id is refused unless the reseller scope is explicit', async () => {
    server.respond(() => ({ status: 200, body: { data: { id: 'whs_all', signature_secret: 's' } } }))
    const client = resellerWide()
    // @ts-expect-error: a reseller-wide subscription must be asked for with { scope: 'reseller' }
    await expect(client.subscriptions.create(input)).rejects.toThrow(/ALL your merchants.*scope: 'reseller'/)
    expect(server.requests).toHaveLength(0)

    await client.subscriptions.create(input, { scope: 'reseller' })
    expect(rawHeader(onlyRequest(), 'service-merchant-id')).toEqual([])
  })

  it('create refuses the reseller scope where it cannot apply', async () => {
    // @ts-expect-error: a merchant-context client has no reseller scope
    await expect(reseller(5).subscriptions.create(input, { scope: 'reseller' })).rejects.toThrow(/conflicts/)
    // @ts-expect-error: merchant credentials have no reseller scope
    await expect(merchant().subscriptions.create(input, { scope: 'reseller' })).rejects.toThrow(/needs a reseller key/)
    expect(server.requests).toHaveLength(0)
  })

  it('create with merchant credentials needs no scope and sends no merchant id', async () => {
    server.respond(() => ({ status: 200, body: { data: { id: 'whs_m', signature_secret: 's' } } }))
    await expect(merchant().subscriptions.create(input)).resolves.toEqual({ id: 'whs_m', signature_secret: 's' })
    expect(rawHeader(onlyRequest(), 'service-merchant-id')).toEqual([])
  })

  it('update: PUTs the fields without signature_secret or id and resolves on 204', async () => {
    server.respond(() => ({ status: 204 }))
    const result = await merchant().subscriptions.update('whs/1 2', { ...subscription, is_active: false })
    expect(result).toBeUndefined()
    const request = onlyRequest()
    expect(request.method).toBe('PUT')
    expect(request.path).toBe('/ps/webhook/subscription/whs%2F1%202')
    expect(JSON.parse(request.body)).toEqual({ ...input, is_active: false })
  })

  it('get: returns the subscription, fields the spec does not show passed through', async () => {
    server.respond(() => ({ status: 200, body: { data: { ...subscription, created_at: '2026-01-01' } } }))
    const got = await merchant().subscriptions.get('whs_01HXYZ')
    expect(got).toEqual({ ...subscription, created_at: '2026-01-01' })
    const request = onlyRequest()
    expect([request.method, request.path, request.body]).toEqual(['GET', '/ps/webhook/subscription/whs_01HXYZ', ''])
  })

  it('list: returns total_item_count and data as answered', async () => {
    const answer = { total_item_count: 2, data: [subscription, { ...subscription, id: 'whs_2' }], page: 1 }
    server.respond(() => ({ status: 200, body: answer }))
    await expect(merchant().subscriptions.list()).resolves.toEqual(answer)
    expect([onlyRequest().method, onlyRequest().path]).toEqual(['GET', '/ps/webhook/subscriptions'])
  })

  it('delete: sends DELETE and resolves on 204', async () => {
    server.respond(() => ({ status: 204 }))
    await expect(merchant().subscriptions.delete('whs_9')).resolves.toBeUndefined()
    expect([onlyRequest().method, onlyRequest().path]).toEqual(['DELETE', '/ps/webhook/subscription/whs_9'])
  })

  it('rejects invalid arguments before sending', async () => {
    const client = merchant()
    await expect(client.subscriptions.create({ ...input, url: 'not a url' })).rejects.toThrow(InvalidRequestError)
    await expect(client.subscriptions.create({ ...input, event_types: [] })).rejects.toThrow(/event_types/)
    await expect(client.subscriptions.get('')).rejects.toThrow(InvalidRequestError)
    await expect(client.webhooks.resend([])).rejects.toThrow(/at least one id/)
    expect(server.requests).toHaveLength(0)
  })

  it('appends the paths to a base url that has a path', async () => {
    server.respond(() => ({ status: 200, body: { total_item_count: 0, data: [] } }))
    const client = createClient({ baseUrl: `${server.url}/api/`, auth: { username: USERNAME, apiKey: API_KEY } })
    await client.subscriptions.list()
    expect(onlyRequest().path).toBe('/api/ps/webhook/subscriptions')
  })
})

describe('webhooks and auth', () => {
  it('resend: PUTs the ids and resolves on 204', async () => {
    server.respond(() => ({ status: 204 }))
    await expect(reseller(8).webhooks.resend(['evt_1', 'evt_2'])).resolves.toBeUndefined()
    const request = onlyRequest()
    expect([request.method, request.path]).toEqual(['PUT', '/ps/webhook/manually_resend_webhooks'])
    expect(JSON.parse(request.body)).toEqual({ ids: ['evt_1', 'evt_2'] })
    expect(rawHeader(request, 'service-merchant-id')).toEqual(['8'])
  })

  it('sendTest: POSTs url and event_type and returns the status the target answered', async () => {
    server.respond(() => ({ status: 200, body: { data: { status_code: 503 } } }))
    const result = await merchant().webhooks.sendTest({ url: 'https://x.example/h', eventType: 'transaction_settled' })
    expect(result).toEqual({ status_code: 503 })
    const request = onlyRequest()
    expect([request.method, request.path]).toEqual(['POST', '/ps/webhook/subscription/test'])
    expect(JSON.parse(request.body)).toEqual({ url: 'https://x.example/h', event_type: 'transaction_settled' })
  })

  it('sendTest of merchant_activated_for_payment_type needs the reseller key without merchant id', async () => {
    const test = { url: 'https://x.example/h', eventType: 'merchant_activated_for_payment_type' }
    await expect(merchant().webhooks.sendTest(test)).rejects.toThrow(/reseller key and no merchant id/)
    await expect(reseller(3).webhooks.sendTest(test)).rejects.toThrow(/reseller key and no merchant id/)
    expect(server.requests).toHaveLength(0)
    server.respond(() => ({ status: 200, body: { data: { status_code: 200 } } }))
    await expect(resellerWide().webhooks.sendTest(test)).resolves.toEqual({ status_code: 200 })
    expect(rawHeader(onlyRequest(), 'service-merchant-id')).toEqual([])
  })

  it('clientToken: sends client_id and the reseller key in the body, no merchant header, expires as a Date', async () => {
    server.respond(() => ({ status: 200, body: { data: { token: 'eyJ.a.b', expires: '2026-11-02T15:04:05Z' } } }))
    const token = await reseller(99).auth.clientToken({ merchantId: 1234 })
    expect(token.token).toBe('eyJ.a.b')
    expect(token.expires).toBeInstanceOf(Date)
    expect(token.expires.toISOString()).toBe('2026-11-02T15:04:05.000Z')
    const request = onlyRequest()
    expect([request.method, request.path]).toEqual(['POST', '/ps/auth/reseller_client_token'])
    expect(JSON.parse(request.body)).toEqual({ client_id: 1234, api_key: RESELLER_KEY })
    expect(rawHeader(request, 'service-merchant-id')).toEqual([])
    expect(rawHeader(request, 'authorization')).toEqual([`reseller ${RESELLER_KEY}`])
  })

  it('clientToken reads an expiry without offset as UTC, and rejects one that is not a datetime', async () => {
    server.respond(() => ({ status: 200, body: { data: { token: 't', expires: '2026-11-02 15:04:05' } } }))
    const token = await resellerWide().auth.clientToken({ merchantId: 1 })
    expect(token.expires.toISOString()).toBe('2026-11-02T15:04:05.000Z')
    server.respond(() => ({ status: 200, body: { data: { token: 't', expires: 'tomorrow' } } }))
    await expect(resellerWide().auth.clientToken({ merchantId: 1 })).rejects.toThrow(InvalidResponseError)
  })

  it('clientToken refuses merchant credentials', async () => {
    await expect(merchant().auth.clientToken({ merchantId: 1 })).rejects.toThrow(/needs a reseller key/)
    expect(server.requests).toHaveLength(0)
  })

  it('clientToken refuses to run in a browser-like environment, before sending anything', async () => {
    const scope = globalThis as Record<string, unknown>
    scope.window = {}
    scope.document = {}
    try {
      await expect(resellerWide().auth.clientToken({ merchantId: 1 })).rejects.toThrow(/server-side only/)
    } finally {
      delete scope.window
      delete scope.document
    }
    expect(server.requests).toHaveLength(0)
  })
})
