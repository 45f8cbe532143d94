import { type AddressInfo, createServer as createNetServer } from 'node:net'
import { inspect } from 'node:util'
import {
  ApiError,
  createClient,
  InvalidRequestError,
  InvalidResponseError,
  NetworkError,
  type SubscriptionInput,
  TimeoutError,
} from '@payhooks/client'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import {
  type RecordedRequest,
  type RecordingServer,
  rawHeader,
  startRecordingServer,
} from '../fixtures/client-recording-server.js'

const RESELLER_KEY = '42|s3cr3tR3s3ll3rK3yV4lu3'
const USERNAME = 'shop_api_user'
const API_KEY = 'mErChAnTkEy0123456789'

const subscription = {
  id: 'whs_01HXYZ',
  url: 'https://shop.example.com/webhooks',
  event_types: ['transaction_settled', 'transaction_returned'],
  is_active: true,
  signature_secret: 'whsec_abcdef',
}
const input: SubscriptionInput = {
  url: 'https://shop.example.com/webhooks',
  event_types: ['transaction_settled', 'transaction_returned'],
  is_active: true,
}

let server: RecordingServer

beforeAll(async () => {
  server = await startRecordingServer()
})
afterAll(() => server.close())
afterEach(() => {
  server.requests.length = 0
  server.respond(() => ({ status: 404, body: { message: 'no route' } }))
})

const reseller = (merchantId: number) =>
  createClient({ baseUrl: server.url, auth: { resellerKey: RESELLER_KEY }, merchantId })
const resellerWide = () => createClient({ baseUrl: server.url, auth: { resellerKey: RESELLER_KEY } })
const merchant = () => createClient({ baseUrl: server.url, auth: { username: USERNAME, apiKey: API_KEY } })

function onlyRequest() {
  expect(server.requests).toHaveLength(1)
  return server.requests[0]!
}

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

describe('failures', () => {
  it('maps a non-2XX answer to ApiError with status, method, path and the raw body', async () => {
    server.respond(() => ({ status: 422, body: '{"message":"The url field is required."}' }))
    const error = await merchant()
      .subscriptions.create(input)
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ApiError)
    expect(error).toMatchObject({
      status: 422,
      method: 'POST',
      path: '/ps/webhook/subscription',
      operation: 'subscriptions.create',
      body: '{"message":"The url field is required."}',
    })
    expect((error as Error).message).toContain('answered 422')
    expect(server.requests).toHaveLength(1)
  })

  it('does not retry a failed call', async () => {
    server.respond(() => ({ status: 500, body: 'oops' }))
    await expect(reseller(1).webhooks.resend(['evt_1'])).rejects.toThrow(ApiError)
    expect(server.requests).toHaveLength(1)
  })

  it('does not follow redirects, so credentials stay with the base url', async () => {
    server.respond((request) =>
      request.path === '/ps/webhook/subscriptions'
        ? { status: 307, headers: { location: '/elsewhere' } }
        : { status: 200, body: { total_item_count: 0, data: [] } },
    )
    await expect(merchant().subscriptions.list()).rejects.toMatchObject({ name: 'ApiError', status: 307 })
    expect(server.requests.map((r) => r.path)).toEqual(['/ps/webhook/subscriptions'])
  })

  it.each([
    ['reseller key', () => reseller(1), [RESELLER_KEY, RESELLER_KEY.split('|')[1]!]],
    ['username:key', merchant, [`${USERNAME}:${API_KEY}`, API_KEY]],
  ])('redacts the %s from errors even when the service echoes it', async (_, makeClient, secrets) => {
    server.respond((request) => ({
      status: 401,
      body: `bad credentials: ${request.headers.authorization} (${request.headers.authorization?.split(/[|:]/).pop()})`,
    }))
    const error = (await makeClient()
      .subscriptions.list()
      .catch((e: unknown) => e)) as ApiError
    expect(error).toBeInstanceOf(ApiError)
    expect(error.body).toContain('[redacted]')
    const views = [error.message, error.stack, JSON.stringify(error), inspect(error, { depth: 10 }), String(error)]
    for (const view of views) for (const secret of secrets) expect(view).not.toContain(secret)
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({ name: 'ApiError', status: 401 })
    expect(inspect(makeClient(), { depth: 10, showHidden: true })).not.toContain(secrets[1])
  })

  describe('credentials echoed by the server, in any form', () => {
    // `/`, `+`, `=`, `"` and `\` change under JSON escaping and URL encoding.
    const KEY = '1001|Tk/9+q=x"Y2\\bLw'
    const USER = 'shop_api_user'
    const APIKEY = 'mK/3+z="Qp8\\wR'

    /** The ways a server may copy `text` into its answer. */
    function echoes(text: string): string[] {
      const json = JSON.stringify(text).slice(1, -1)
      const url = encodeURIComponent(text)
      return [
        text,
        json,
        json.replace(/\//g, '\\/'), // escaped slashes, as PHP's json_encode writes them
        json.replace(/\|/g, '\\u007c').replace(/\//g, '\\/'),
        [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
        url, // %7C, %2F, %20
        url.replace(/%[0-9A-F]{2}/g, (pair) => pair.toLowerCase()),
        new URLSearchParams({ v: text }).toString().slice(2), // form encoding: a space is `+`
      ]
    }

    const schemes = [
      ['reseller key', { resellerKey: KEY }, [KEY, KEY.split('|')[1]!]],
      ['username and API key', { username: USER, apiKey: APIKEY }, [`${USER}:${APIKEY}`, APIKEY]],
    ] as const

    /** The Authorization header and the bare secret, each in every form, one per line. */
    function echoBody(request: RecordedRequest, secrets: readonly string[]): string {
      const header = request.headers.authorization ?? ''
      return ['bad credentials', ...echoes(header), ...echoes(secrets[1]!)].join('\n')
    }

    function expectNoCredential(error: unknown, secrets: readonly string[]) {
      const views = [
        (error as Error).message,
        String(error),
        JSON.stringify(error),
        inspect(error, { depth: 10 }),
        (error as Error).stack ?? '',
        ...Object.values(error as object).map((value) => String(value)),
      ]
      for (const view of views) {
        for (const secret of secrets) {
          // inspect() shows a string with its backslashes doubled and its double quotes as they are.
          for (const form of [...echoes(secret), inspect(secret).slice(1, -1)]) expect(view).not.toContain(form)
        }
      }
    }

    it.each(schemes)(
      'redacts the %s from the reason phrase and the body of a non-2XX answer',
      async (_, auth, secrets) => {
        server.respond((request) => ({
          status: 401,
          statusText: `Bad key ${request.headers.authorization} (${encodeURIComponent(secrets[1])})`,
          body: echoBody(request, secrets),
        }))
        const error = (await createClient({ baseUrl: server.url, auth })
          .subscriptions.list()
          .catch((e: unknown) => e)) as ApiError
        expect(error).toBeInstanceOf(ApiError)
        expectNoCredential(error, secrets)
        const scheme = secrets[0] === KEY ? 'reseller' : 'basic'
        expect(error.statusText).toBe(`Bad key ${scheme} [redacted] ([redacted])`)
        expect(error.message).toContain(
          `answered 401 Bad key ${scheme} [redacted] ([redacted]) (the service refused the credentials): bad credentials ${scheme} [redacted] `,
        )
        // Each echo is replaced as one piece: 16 echoes, 16 markers, nothing mangled around them.
        expect(error.body.match(/\[redacted\]/g)).toHaveLength(16)
        expect(error.body.split('\n')[0]).toBe('bad credentials')
        expect(JSON.parse(JSON.stringify(error))).toMatchObject({ name: 'ApiError', status: 401 })
      },
    )

    it.each(schemes)('redacts the %s from a 2XX answer that is not JSON', async (_, auth, secrets) => {
      server.respond((request) => ({ status: 200, body: echoBody(request, secrets) }))
      const error = await createClient({ baseUrl: server.url, auth })
        .subscriptions.list()
        .catch((e: unknown) => e)
      expect(error).toBeInstanceOf(InvalidResponseError)
      expect((error as InvalidResponseError).body.match(/\[redacted\]/g)).toHaveLength(16)
      expectNoCredential(error, secrets)
    })

    it.each(schemes)(
      'redacts the %s from the cause chain of an answer fetch could not parse',
      async (_, auth, secrets) => {
        // A header value with a control character: undici's parser error keeps the bytes from there on.
        const raw = createNetServer((socket) => {
          socket.once('data', (request) => {
            const header = /^authorization: (.*)$/im.exec(request.toString('latin1'))?.[1] ?? ''
            socket.end(`HTTP/1.1 200 OK\r\nx-echo: a\x01 ${header} ${secrets[1]}\r\n\r\n`)
          })
        })
        await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve))
        const port = (raw.address() as AddressInfo).port
        try {
          const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, auth })
          const error = await client.subscriptions.list().catch((e: unknown) => e)
          expect(error).toBeInstanceOf(NetworkError)
          expect((error as NetworkError).cause).toBeInstanceOf(TypeError)
          expect(inspect(error, { depth: 10 })).toMatch(/HPE_INVALID_HEADER_TOKEN/)
          expectNoCredential(error, secrets)
        } finally {
          await new Promise((resolve) => raw.close(resolve))
        }
      },
    )

    it.each([
      ['reseller key', { resellerKey: '7|Qz9' }, 'the secret part of the reseller key'],
      ['API key', { username: 'shop', apiKey: 'Qz9' }, 'the API key'],
    ] as const)('withholds server text when the %s is too short to redact', async (_, auth, label) => {
      server.respond((request) => ({
        status: 403,
        statusText: `Bad key ${request.headers.authorization} Qz9`,
        body: `no: Qz9 ${encodeURIComponent(request.headers.authorization ?? '')}`,
      }))
      const error = (await createClient({ baseUrl: server.url, auth, merchantId: 3 })
        .subscriptions.list()
        .catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(ApiError)
      expect([error.status, error.statusText]).toEqual([403, ''])
      const notice = `[the service's text is withheld, not shown: ${label} is shorter than 8 characters, too short to redact from it safely]`
      expect(error.body).toBe(notice)
      expect(error.message).toBe(
        `subscriptions.list: GET /ps/webhook/subscriptions answered 403 (the service refused this call for these credentials): ${notice}`,
      )
      for (const view of [String(error), JSON.stringify(error), inspect(error, { depth: 10 })]) {
        expect(view).not.toContain('Qz9')
      }
    })
  })

  it('maps an answer of the wrong shape to InvalidResponseError without quoting values', async () => {
    server.respond(() => ({ status: 200, body: { data: { ...subscription, signature_secret: 987654321 } } }))
    const error = (await merchant()
      .subscriptions.get('whs_1')
      .catch((e: unknown) => e)) as InvalidResponseError
    expect(error).toBeInstanceOf(InvalidResponseError)
    expect(error.issues).toEqual([{ path: 'data.signature_secret', message: 'expected string' }])
    expect(error.message).not.toContain('987654321')
    expect(error.status).toBe(200)

    server.respond(() => ({ status: 200, body: '<html>maintenance</html>' }))
    await expect(merchant().subscriptions.list()).rejects.toThrow(/unexpected body: \(root\): not JSON/)
  })

  describe('secret fields of an answer kept on an error', () => {
    const SECRET = 'whsec_S3cr3tV4lu3ThatMustNotLeak'
    const TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl'

    function expectAbsent(error: unknown, ...values: string[]) {
      const views = [String(error), JSON.stringify(error), inspect(error, { depth: 10, showHidden: true })]
      for (const view of views) for (const value of values) expect(view).not.toContain(value)
    }

    it('redacts signature_secret from a subscription list or get with a field of an unexpected type', async () => {
      const odd = { ...subscription, signature_secret: SECRET, is_active: 'yes' }
      server.respond(() => ({ status: 200, body: { total_item_count: 1, data: [odd] } }))
      const listed = (await merchant()
        .subscriptions.list()
        .catch((e: unknown) => e)) as InvalidResponseError
      expect(listed).toBeInstanceOf(InvalidResponseError)
      expect(listed.issues).toEqual([{ path: 'data.0.is_active', message: 'expected boolean' }])
      expect(JSON.parse(listed.body)).toEqual({
        total_item_count: 1,
        data: [{ ...odd, signature_secret: '[redacted]' }],
      })
      expectAbsent(listed, SECRET)

      server.respond(() => ({ status: 200, body: { data: odd } }))
      const got = await merchant()
        .subscriptions.get('whs_1')
        .catch((e: unknown) => e)
      expect(got).toBeInstanceOf(InvalidResponseError)
      expectAbsent(got, SECRET)
    })

    it('redacts the token of a client-token answer whose expires is a number', async () => {
      server.respond(() => ({ status: 200, body: { data: { token: TOKEN, expires: 1793631600 } } }))
      const error = (await resellerWide()
        .auth.clientToken({ merchantId: 1 })
        .catch((e: unknown) => e)) as InvalidResponseError
      expect(error).toBeInstanceOf(InvalidResponseError)
      expect(JSON.parse(error.body)).toEqual({ data: { token: '[redacted]', expires: 1793631600 } })
      expectAbsent(error, TOKEN)
    })

    it('redacts them from a non-2XX answer and from a cut-off answer that is not JSON', async () => {
      server.respond(() => ({
        status: 500,
        body: `{"data":[{"signature_secret":"${SECRET}"}],"trace":"token=${TOKEN}"}`,
      }))
      const failed = await merchant()
        .subscriptions.list()
        .catch((e: unknown) => e)
      expect(failed).toBeInstanceOf(ApiError)
      expectAbsent(failed, SECRET, TOKEN)

      server.respond(() => ({
        status: 200,
        body: `{"total_item_count":1,"data":[{"id":"a","signature_secret":"${SECRET}`,
      }))
      const cut = (await merchant()
        .subscriptions.list()
        .catch((e: unknown) => e)) as InvalidResponseError
      expect(cut).toBeInstanceOf(InvalidResponseError)
      expect(cut.body).toBe('{"total_item_count":1,"data":[{"id":"a","signature_secret":"[redacted]')
      expectAbsent(cut, SECRET)
    })

    it('redacts the reseller key echoed upper-cased, base64-encoded or cut to its first 16 characters', async () => {
      const tail = RESELLER_KEY.split('|')[1]!
      server.respond(() => ({
        status: 401,
        body: [
          `upper ${RESELLER_KEY.toUpperCase()}`,
          `base64 ${btoa(RESELLER_KEY)}`,
          `header ${btoa(`reseller ${RESELLER_KEY}`)}`,
          `url-safe ${btoa(tail).replace(/=+$/, '')}`,
          `cut ${RESELLER_KEY.slice(0, 16)}...`,
          `cut secret ${tail.slice(0, 17)}...`,
        ].join('\n'),
      }))
      const error = (await resellerWide()
        .subscriptions.list()
        .catch((e: unknown) => e)) as ApiError
      expect(error).toBeInstanceOf(ApiError)
      expect(error.body.split('\n').map((line) => line.replace(/ .*\[redacted\].*$/, ''))).toEqual([
        'upper',
        'base64',
        'header',
        'url-safe',
        'cut',
        'cut',
      ])
      const forms = [RESELLER_KEY.toUpperCase(), btoa(RESELLER_KEY), RESELLER_KEY.slice(0, 16), tail.slice(0, 16)]
      expectAbsent(error, ...forms, btoa(RESELLER_KEY).slice(0, 16), btoa(`reseller ${RESELLER_KEY}`).slice(12, 40))
    })
  })

  it('aborts a call that gets no answer within timeoutMs', async () => {
    server.respond(() => 'hang')
    const client = createClient({ baseUrl: server.url, auth: { username: USERNAME, apiKey: API_KEY }, timeoutMs: 300 })
    const started = Date.now()
    const error = await client.subscriptions.list().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TimeoutError)
    expect(error).toMatchObject({ timeoutMs: 300, method: 'GET', path: '/ps/webhook/subscriptions' })
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(server.requests).toHaveLength(1)

    await expect(merchant().subscriptions.get('whs_1', { timeoutMs: 200 })).rejects.toMatchObject({
      name: 'TimeoutError',
      timeoutMs: 200,
    })
  })

  it("honours the caller's signal: rejects with its reason, and sends nothing when already aborted", async () => {
    const controller = new AbortController()
    const reason = new Error('user cancelled')
    server.respond(() => {
      controller.abort(reason)
      return 'hang'
    })
    await expect(merchant().subscriptions.list({ signal: controller.signal })).rejects.toBe(reason)
    expect(server.requests).toHaveLength(1)

    await expect(merchant().subscriptions.list({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason)
    expect(server.requests).toHaveLength(1)
  })

  it('maps a refused connection to NetworkError', async () => {
    const closed = await startRecordingServer()
    await closed.close()
    const client = createClient({ baseUrl: closed.url, auth: { resellerKey: RESELLER_KEY }, merchantId: 1 })
    const error = (await client.subscriptions.list().catch((e: unknown) => e)) as NetworkError
    expect(error).toBeInstanceOf(NetworkError)
    expect(error.message).toMatch(/GET \/ps\/webhook\/subscriptions failed: .*ECONNREFUSED/)
    expect(inspect(error, { depth: 10 })).not.toContain(RESELLER_KEY)
  })

  it('checks options when the client is created', () => {
    const auth = { username: USERNAME, apiKey: API_KEY }
    expect(() => createClient({ baseUrl: 'ftp://x', auth })).toThrow(/http/)
    expect(() => createClient({ baseUrl: 'http://u:p@x', auth })).toThrow(/credentials/)
    expect(() => createClient({ baseUrl: server.url, auth, timeoutMs: 0 })).toThrow(RangeError)
    expect(() => createClient({ baseUrl: server.url, auth, merchantId: 'abc' })).toThrow(/positive integer/)
    expect(() => createClient({ baseUrl: server.url, auth, merchantId: 1.5 })).toThrow(/positive integer/)
  })
})
