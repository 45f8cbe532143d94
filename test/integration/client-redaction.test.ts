// The client keeps credentials and secret fields out of its errors, however the service echoes them; against a
// recording server on 127.0.0.1 (and a raw socket for an answer fetch cannot parse).
import { type AddressInfo, createServer as createNetServer } from 'node:net'
import { inspect } from 'node:util'
import { ApiError, createClient, InvalidResponseError, NetworkError } from '@payhooks/client'
import { describe, expect, it } from 'vitest'
import {
  API_KEY,
  merchant,
  RESELLER_KEY,
  reseller,
  resellerWide,
  server,
  subscription,
  USERNAME,
  useRecordingServer,
} from '../fixtures/client-api.js'
import type { RecordedRequest } from '../fixtures/client-recording-server.js'

useRecordingServer()

describe('failures', () => {
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
})
