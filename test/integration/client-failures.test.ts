// How the client fails: a non-2XX answer, an answer of the wrong shape, a redirect, a timeout, the caller's
// abort, a refused connection and bad options; against a recording server on 127.0.0.1.
import { inspect } from 'node:util'
import { ApiError, createClient, InvalidResponseError, NetworkError, TimeoutError } from '@payhooks/client'
import { describe, expect, it } from 'vitest'
import {
  API_KEY,
  input,
  merchant,
  RESELLER_KEY,
  reseller,
  server,
  subscription,
  USERNAME,
  useRecordingServer,
} from '../fixtures/client-api.js'
import { startRecordingServer } from '../fixtures/client-recording-server.js'

useRecordingServer()

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
