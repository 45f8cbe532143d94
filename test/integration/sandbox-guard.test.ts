// The sandbox as a dev server on a shared machine: the control token, the urls it refuses to send
// to, and test webhooks that do not tell why a target failed. Real HTTP on 127.0.0.1.
import { createServer, request as httpRequest } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createSandbox, type Sandbox } from '@payhooks/sandbox'
import { afterEach, describe, expect, it } from 'vitest'
import { call, REFUSING_PORT, startReceiver } from '../fixtures/sandbox-receivers.js'

const RESELLER = 'reseller 1001|sandbox-reseller-key'
const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of cleanup.splice(0).reverse()) await close()
})

function sandboxOf(options: Parameters<typeof createSandbox>[0] = {}): Sandbox {
  const sandbox = createSandbox({ clock: 'manual', ...options })
  cleanup.push(() => sandbox.close())
  return sandbox
}

/** The sandbox's port on 127.0.0.1, whatever address it listens on. */
const loopbackBase = (url: string) => `http://127.0.0.1:${new URL(url).port}`

/** A GET with a Host header of our choosing (fetch does not allow setting it). */
function getWithHost(base: string, path: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(path, base)
    const req = httpRequest(
      { hostname: target.hostname, port: target.port, path: target.pathname, method: 'GET', headers: { host } },
      (res) => {
        let body = ''
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString('utf8')
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      },
    )
    req.on('error', reject)
    req.end()
  })
}

const CONTROL: [string, string, unknown?][] = [
  ['GET', '/_sandbox/credentials'],
  ['GET', '/_sandbox/log'],
  ['GET', '/_sandbox/clock'],
  ['GET', '/_sandbox/events'],
  ['GET', '/_sandbox/no-such-route'],
  ['POST', '/_sandbox/emit', { event_type: 'transaction_settled' }],
  ['POST', '/_sandbox/clock/advance', { ms: 1000 }],
  ['POST', '/_sandbox/resend', { ids: ['evt_x'] }],
]

describe('control token', () => {
  it('is needed on every control route once the sandbox listens beyond loopback, and printed at start', async () => {
    const lines: string[] = []
    const sandbox = sandboxOf({ logger: (line) => lines.push(line) })
    const { url } = await sandbox.listen(0, '0.0.0.0')
    const base = loopbackBase(url)
    expect(sandbox.controlTokenRequired).toBe(true)
    expect(lines.join('\n')).toContain(`control token ${sandbox.controlToken}`)
    expect(lines.join('\n')).toContain(`dashboard ${url}/?token=${encodeURIComponent(sandbox.controlToken)}`)

    for (const [method, path, body] of CONTROL) {
      const response = await call(base, method, path, { body })
      expect({ method, path, status: response.status }).toEqual({ method, path, status: 401 })
      expect(response.json.error.message).toMatch(/sandbox token/)
      expect(response.headers.get('www-authenticate')).toBe('Bearer realm="payhooks-sandbox"')
    }
    expect(sandbox.log()).toEqual([])

    const token = sandbox.controlToken
    const viaHeader = await call(base, 'GET', '/_sandbox/credentials', { headers: { 'x-sandbox-token': token } })
    expect(viaHeader.status).toBe(200)
    expect(viaHeader.json.data.resellers[0].key).toBe('1001|sandbox-reseller-key')
    const viaBearer = await call(base, 'POST', '/_sandbox/emit', {
      headers: { authorization: `Bearer ${token}` },
      body: { event_type: 'transaction_settled' },
    })
    expect(viaBearer.status).toBe(200)
    expect((await call(base, 'GET', `/_sandbox/log?token=${encodeURIComponent(token)}`)).status).toBe(200)
    // A token in the query string opens reads only (the event stream cannot send headers).
    const queryPost = await call(base, 'POST', `/_sandbox/clock/advance?token=${encodeURIComponent(token)}`, {
      body: { ms: 1 },
    })
    expect(queryPost.status).toBe(401)
    const wrong = await call(base, 'GET', '/_sandbox/credentials', { headers: { 'x-sandbox-token': `${token}-nope` } })
    expect([wrong.status, wrong.json.error.message]).toEqual([401, 'wrong sandbox token'])

    // The service routes keep their own authorization.
    expect((await call(base, 'GET', '/ps/webhook/subscriptions', { auth: RESELLER })).status).toBe(200)
  })

  it('serves the dashboard page without the token, with no data in it', async () => {
    const sandbox = sandboxOf()
    const { url } = await sandbox.listen(0, '0.0.0.0')
    const base = loopbackBase(url)
    for (const path of ['/', '/_sandbox/ui', '/_sandbox/ui/app.js', '/_sandbox/ui/app.css']) {
      const response = await call(base, 'GET', path)
      expect({ path, status: response.status }).toEqual({ path, status: 200 })
      expect(response.text).not.toContain('sandbox-reseller-key')
      expect(response.text).not.toContain(sandbox.controlToken)
    }
    const page = await call(base, 'GET', '/')
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
  })

  it('is not needed on loopback by default, and can be required or waived', async () => {
    const open = sandboxOf()
    const { url } = await open.listen()
    expect(open.controlTokenRequired).toBe(false)
    expect((await call(url, 'GET', '/_sandbox/credentials')).status).toBe(200)

    const strict = sandboxOf({ requireControlToken: true, controlToken: 'my-own-token-0123456789' })
    const strictUrl = (await strict.listen()).url
    expect(strict.controlTokenRequired).toBe(true)
    expect((await call(strictUrl, 'GET', '/_sandbox/credentials')).status).toBe(401)
    const withToken = await call(strictUrl, 'GET', '/_sandbox/credentials', {
      headers: { 'x-sandbox-token': 'my-own-token-0123456789' },
    })
    expect(withToken.status).toBe(200)

    const waived = sandboxOf({ requireControlToken: false })
    const waivedUrl = (await waived.listen(0, '0.0.0.0')).url
    expect(waived.controlTokenRequired).toBe(false)
    expect((await call(loopbackBase(waivedUrl), 'GET', '/_sandbox/credentials')).status).toBe(200)

    expect(() => createSandbox({ controlToken: 'short' })).toThrow(/controlToken/)
  })

  it('without a token, refuses other origins and Host names a DNS rebinding could use', async () => {
    const sandbox = sandboxOf()
    const { url } = await sandbox.listen()
    const port = new URL(url).port
    const crossSite = await call(url, 'POST', '/_sandbox/emit', {
      headers: { origin: 'http://evil.example' },
      body: { event_type: 'transaction_settled' },
    })
    expect(crossSite.status).toBe(403)
    expect(sandbox.log()).toEqual([])
    const sameSite = await call(url, 'POST', '/_sandbox/emit', {
      headers: { origin: url },
      body: { event_type: 'transaction_settled' },
    })
    expect(sameSite.status).toBe(200)

    expect((await getWithHost(url, '/_sandbox/credentials', `evil.example:${port}`)).status).toBe(403)
    const rebound = await getWithHost(url, '/_sandbox/credentials', `evil.example:${port}`)
    expect(rebound.body).not.toContain('sandbox-reseller-key')
    expect((await getWithHost(url, '/_sandbox/credentials', `localhost:${port}`)).status).toBe(200)
  })
})

describe('subscription urls', () => {
  const refused: [string, RegExp][] = [
    ['http://user:secret@127.0.0.1:3000/hook', /credentials/],
    ['http://127.0.0.1:3000/hook\r\nX-Injected: 1', /control characters/],
    ['http://127.0.0.1:3000/hook\n', /control characters/],
    ['http://169.254.169.254/latest/meta-data/', /link-local or cloud metadata/],
    ['http://[fe80::1]:8080/hook', /link-local or cloud metadata/],
    ['http://[fd00:ec2::254]/latest/meta-data/', /link-local or cloud metadata/],
    ['http://[::ffff:169.254.169.254]/', /link-local or cloud metadata/],
    ['http://2852039166/', /link-local or cloud metadata/],
  ]

  it('refuses credentials, CR/LF and link-local or metadata targets with 400 on create, update and test', async () => {
    const sandbox = sandboxOf()
    const { url: base } = await sandbox.listen()
    const created = await call(base, 'POST', '/ps/webhook/subscription', {
      auth: RESELLER,
      body: { url: 'http://127.0.0.1:3000/hook', event_types: ['transaction_settled'], is_active: true },
    })
    expect(created.status).toBe(200)
    const { id } = created.json.data
    for (const [url, message] of refused) {
      const create = await call(base, 'POST', '/ps/webhook/subscription', {
        auth: RESELLER,
        body: { url, event_types: ['transaction_settled'], is_active: true },
      })
      const update = await call(base, 'PUT', `/ps/webhook/subscription/${id}`, { auth: RESELLER, body: { url } })
      const test = await call(base, 'POST', '/ps/webhook/subscription/test', {
        auth: RESELLER,
        body: { url, event_type: 'transaction_settled' },
      })
      expect({ url, statuses: [create.status, update.status, test.status] }).toEqual({ url, statuses: [400, 400, 400] })
      for (const response of [create, update, test]) expect(response.json.error.message).toMatch(message)
      expect(() => sandbox.subscribe({ url, eventTypes: ['transaction_settled'] })).toThrow(message)
    }
    expect(sandbox.subscriptions().map((s) => s.url)).toEqual(['http://127.0.0.1:3000/hook'])
  })
})

describe('test webhook failures', () => {
  it('answer the same fixed message for a closed port and a silent one, so they cannot be told apart', async () => {
    const silent = createServer(() => {
      // Never answers.
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    cleanup.push(
      () =>
        new Promise<void>((resolve) => {
          silent.close(() => resolve())
          silent.closeAllConnections()
        }),
    )
    const sandbox = sandboxOf({ deliveryTimeoutMs: 300 })
    const { url: base } = await sandbox.listen()
    const test = (url: string) =>
      call(base, 'POST', '/ps/webhook/subscription/test', {
        auth: RESELLER,
        body: { url, event_type: 'transaction_settled' },
      })
    const closed = await test(`http://127.0.0.1:${REFUSING_PORT}/hook`)
    const timedOut = await test(`http://127.0.0.1:${(silent.address() as AddressInfo).port}/hook`)
    const expected = { error: { message: 'test webhook: the target did not answer' } }
    expect([closed.status, closed.json]).toEqual([502, expected])
    expect([timedOut.status, timedOut.json]).toEqual([502, expected])

    const receiver = await startReceiver(() => 418)
    cleanup.push(() => receiver.close())
    expect((await test(receiver.url)).json).toEqual({ data: { status_code: 418 } })
  })
})
