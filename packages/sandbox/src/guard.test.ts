import type { IncomingMessage } from 'node:http'
import { describe, expect, it } from 'vitest'
import type { SandboxHttpError } from './errors.js'
import { type ControlGuard, checkControlAccess, tokenRequired } from './guard.js'

const TOKEN = 'a-control-token-of-enough-length'

/** The parts of a request the guard reads. */
function request(
  headers: Record<string, string>,
  { method = 'GET', localAddress = '127.0.0.1' }: { method?: string; localAddress?: string } = {},
): IncomingMessage {
  return { method, headers, socket: { localAddress } } as unknown as IncomingMessage
}

function status(guard: ControlGuard, req: IncomingMessage, path = '/_sandbox/credentials'): number {
  try {
    checkControlAccess(guard, req, new URL(path, 'http://sandbox'))
    return 200
  } catch (error) {
    return (error as SandboxHttpError).status
  }
}

const auto = (exposed = false): ControlGuard => ({ token: TOKEN, mode: undefined, exposed })

describe('tokenRequired', () => {
  it('in auto mode: when listening beyond loopback, or for a request that arrived on a non-loopback address', () => {
    expect(tokenRequired(auto(), request({}))).toBe(false)
    expect(tokenRequired(auto(), request({}, { localAddress: '::ffff:127.0.0.1' }))).toBe(false)
    expect(tokenRequired(auto(true), request({}))).toBe(true)
    expect(tokenRequired(auto(), request({}, { localAddress: '192.0.2.10' }))).toBe(true)
    expect(tokenRequired(auto(), request({}, { localAddress: '' }))).toBe(true)
  })

  it('follows requireControlToken when it is set', () => {
    expect(tokenRequired({ token: TOKEN, mode: true, exposed: false }, request({}))).toBe(true)
    expect(
      tokenRequired({ token: TOKEN, mode: false, exposed: true }, request({}, { localAddress: '192.0.2.10' })),
    ).toBe(false)
  })
})

describe('checkControlAccess', () => {
  const host = { host: '127.0.0.1:4010' }

  it('takes the token from x-sandbox-token, Authorization: Bearer, or ?token= on GET only', () => {
    const guard = auto(true)
    expect(status(guard, request(host))).toBe(401)
    expect(status(guard, request({ ...host, 'x-sandbox-token': TOKEN }))).toBe(200)
    expect(status(guard, request({ ...host, authorization: `Bearer ${TOKEN}` }))).toBe(200)
    expect(status(guard, request(host), `/_sandbox/events?token=${TOKEN}`)).toBe(200)
    expect(status(guard, request(host, { method: 'POST' }), `/_sandbox/emit?token=${TOKEN}`)).toBe(401)
    expect(status(guard, request({ ...host, 'x-sandbox-token': `${TOKEN}x` }))).toBe(401)
    expect(status(guard, request({ ...host, authorization: 'reseller 1001|key' }))).toBe(401)
  })

  it('refuses a wrong token even where none is needed', () => {
    expect(status(auto(), request({ ...host, 'x-sandbox-token': 'wrong' }))).toBe(401)
  })

  it('refuses browser requests from another origin, with or without the token', () => {
    expect(status(auto(), request({ ...host, origin: 'http://evil.example' }, { method: 'POST' }))).toBe(403)
    expect(status(auto(), request({ ...host, origin: 'null' }, { method: 'POST' }))).toBe(403)
    expect(
      status(
        auto(true),
        request({ ...host, origin: 'http://evil.example', 'x-sandbox-token': TOKEN }, { method: 'POST' }),
      ),
    ).toBe(403)
    expect(status(auto(), request({ ...host, origin: 'http://127.0.0.1:4010' }, { method: 'POST' }))).toBe(200)
  })

  it('without a token, answers only to localhost or an IP literal in Host (DNS rebinding)', () => {
    for (const name of ['127.0.0.1:4010', 'localhost:4010', 'app.localhost', '[::1]:4010', '10.1.2.3']) {
      expect({ name, status: status(auto(), request({ host: name })) }).toEqual({ name, status: 200 })
    }
    for (const name of ['evil.example:4010', 'localhost.evil.example', '']) {
      expect({ name, status: status(auto(), request({ host: name })) }).toEqual({ name, status: 403 })
    }
    expect(status(auto(), request({ host: 'evil.example', 'x-sandbox-token': TOKEN }))).toBe(200)
    // Waived on purpose: any Host, as for a sandbox other containers reach by its name.
    expect(status({ token: TOKEN, mode: false, exposed: true }, request({ host: 'sandbox:4010' }))).toBe(200)
    expect(
      status(
        { token: TOKEN, mode: false, exposed: true },
        request({ host: 'sandbox:4010', origin: 'http://evil.example' }),
      ),
    ).toBe(403)
  })
})
