import { createHmac } from 'node:crypto'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { hmacBackend, isSignatureShaped, sign, verify } from './signature.js'

// RFC 4231 test cases whose keys are ASCII (the spec's secrets are ASCII strings).
const rfc4231 = [
  {
    name: 'test case 1',
    key: '\x0b'.repeat(20),
    data: new TextEncoder().encode('Hi There'),
    mac: 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7',
  },
  {
    name: 'test case 2',
    key: 'Jefe',
    data: new TextEncoder().encode('what do ya want for nothing?'),
    mac: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  },
  {
    name: 'test case 4',
    key: String.fromCharCode(...Array.from({ length: 25 }, (_, i) => i + 1)),
    data: new Uint8Array(50).fill(0xcd),
    mac: '82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b',
  },
]

const body = '{"event_type":"transaction_settled","event_id":"evt_1","data":{"settlement_date":"2026-11-03T07:59:00Z"}}'

/** Loads signature.ts as it behaves where node:crypto is absent (Workers, browsers). */
async function loadWebCryptoOnly() {
  vi.resetModules()
  const original = process.getBuiltinModule
  Object.defineProperty(process, 'getBuiltinModule', { value: undefined, configurable: true, writable: true })
  try {
    const fresh = './signature.js?webcrypto'
    return (await import(/* @vite-ignore */ fresh)) as typeof import('./signature.js')
  } finally {
    Object.defineProperty(process, 'getBuiltinModule', { value: original, configurable: true, writable: true })
  }
}

describe.each([
  ['node:crypto', async () => ({ sign, verify, hmacBackend })],
  ['Web Crypto', loadWebCryptoOnly],
])('signature with %s', (label, load) => {
  afterEach(() => vi.resetModules())

  it('runs on the intended backend', async () => {
    expect((await load()).hmacBackend).toBe(label)
  })

  it.each(rfc4231)('matches RFC 4231 $name as upper-case hex', async ({ key, data, mac }) => {
    const impl = await load()
    expect(await impl.sign(key, data)).toBe(mac.toUpperCase())
    expect(await impl.verify(key, data, mac.toUpperCase())).toBe(true)
  })

  it('verifies the exact body and rejects one added space', async () => {
    const impl = await load()
    const signature = await impl.sign('whsec_test', body)
    expect(signature).toBe(createHmac('sha256', 'whsec_test').update(body).digest('hex').toUpperCase())
    expect(await impl.verify('whsec_test', body, signature)).toBe(true)
    expect(await impl.verify('whsec_test', body.replace('"2026-11-03', '" 2026-11-03'), signature)).toBe(false)
    expect(await impl.verify('whsec_test', `${body} `, signature)).toBe(false)
  })

  it('rejects a wrong secret, and accepts any secret of a list', async () => {
    const impl = await load()
    const signature = await impl.sign('new-secret', body)
    expect(await impl.verify('old-secret', body, signature)).toBe(false)
    expect(await impl.verify(['old-secret', 'new-secret'], body, signature)).toBe(true)
  })

  it('rejects a header whose hex is valid only up to a bad character', async () => {
    const impl = await load()
    const signature = await impl.sign('whsec_test', body)
    // Node's hex decoder stops at the first bad character; the shape check must catch it first.
    const truncated = `${signature.slice(0, 62)}ZZ`
    expect(await impl.verify('whsec_test', body, truncated)).toBe(false)
    expect(await impl.verify('whsec_test', body, `${signature}00`)).toBe(false)
    expect(await impl.verify('whsec_test', body, signature.slice(0, 62))).toBe(false)
  })
})

describe('isSignatureShaped', () => {
  it('accepts exactly 64 hex characters', () => {
    expect(isSignatureShaped('A'.repeat(64))).toBe(true)
    expect(isSignatureShaped('a'.repeat(64))).toBe(true)
    expect(isSignatureShaped('g'.repeat(64))).toBe(false)
    expect(isSignatureShaped(` ${'A'.repeat(63)}`)).toBe(false)
    expect(isSignatureShaped(undefined)).toBe(false)
  })
})

it('sign and verify refuse empty secrets', async () => {
  await expect(sign('', body)).rejects.toThrow(TypeError)
  await expect(verify([], body, 'A'.repeat(64))).rejects.toThrow(TypeError)
})
