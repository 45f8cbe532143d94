import * as nodeCrypto from 'node:crypto'
import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { bytesToHex, type CryptoProvider, hexToBytes } from '../crypto/crypto-provider.js'
import { nodeCryptoProvider } from '../crypto/node-crypto-provider.js'
import { subtleCryptoProvider } from '../crypto/subtle-crypto-provider.js'
import { createSigner, hmacBackend, isSignatureShaped, sign, verify } from './signature.js'

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

const providers: [string, CryptoProvider][] = [
  ['node:crypto', nodeCryptoProvider(nodeCrypto, Buffer)],
  ['Web Crypto', subtleCryptoProvider(globalThis.crypto.subtle)],
]

describe.each(providers)('%s provider', (label, provider) => {
  it('names itself', () => {
    expect(provider.name).toBe(label)
  })

  it.each(rfc4231)('signs RFC 4231 $name as upper-case hex', async ({ key, data, mac }) => {
    expect(await provider.sign(key, data)).toBe(mac.toUpperCase())
  })

  it.each(rfc4231)('matches RFC 4231 $name, and only the right secret of a list', async ({ key, data, mac }) => {
    for (const expected of [mac, mac.toUpperCase()]) {
      expect(await provider.match([key], data, expected)).toBe(0)
      expect(await provider.match(['other', key], data, expected)).toBe(1)
      expect(await provider.match(['other'], data, expected)).toBe(-1)
      expect(await provider.match([key], new Uint8Array([...data, 0]), expected)).toBe(-1)
    }
  })

  it('answers synchronously exactly when it is node:crypto', () => {
    const signed = provider.sign('whsec_test', body)
    const matched = provider.match(['whsec_test'], body, 'A'.repeat(64))
    expect(signed instanceof Promise).toBe(label === 'Web Crypto')
    expect(matched instanceof Promise).toBe(label === 'Web Crypto')
  })
})

describe.each(providers)('signature with %s', (label, provider) => {
  const load = () => createSigner(provider)

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

it('converts hex of either case to bytes and back to upper case', () => {
  const bytes = Uint8Array.from({ length: 256 }, (_, i) => i)
  const hex = Buffer.from(bytes).toString('hex')
  expect(hexToBytes(hex)).toEqual(bytes)
  expect(hexToBytes(hex.toUpperCase())).toEqual(bytes)
  expect(bytesToHex(bytes)).toBe(hex.toUpperCase())
})

describe('isSignatureShaped', () => {
  it('accepts exactly 64 hex characters', () => {
    expect(isSignatureShaped('A'.repeat(64))).toBe(true)
    expect(isSignatureShaped('a'.repeat(64))).toBe(true)
    expect(isSignatureShaped('g'.repeat(64))).toBe(false)
    expect(isSignatureShaped(` ${'A'.repeat(63)}`)).toBe(false)
    expect(isSignatureShaped(undefined)).toBe(false)
  })

  it('agrees with /^[0-9A-Fa-f]{64}$/ for every character up to U+02FF, at either end, and on length', () => {
    const hex = /^[0-9A-Fa-f]{64}$/
    for (let code = 0; code <= 0x2ff; code++) {
      const char = String.fromCharCode(code)
      for (const candidate of [char + 'a'.repeat(63), 'B'.repeat(63) + char]) {
        expect(isSignatureShaped(candidate), `U+${code.toString(16)}`).toBe(hex.test(candidate))
      }
    }
    expect(isSignatureShaped('a'.repeat(63))).toBe(false)
    expect(isSignatureShaped('a'.repeat(65))).toBe(false)
  })
})

it('sign and verify refuse empty secrets', async () => {
  await expect(sign('', body)).rejects.toThrow(TypeError)
  await expect(verify([], body, 'A'.repeat(64))).rejects.toThrow(TypeError)
})

it('uses node:crypto on Node, chosen once when the module loads', () => {
  expect(hmacBackend).toBe('node:crypto')
})
