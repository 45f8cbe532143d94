import { Buffer } from 'node:buffer'
import * as nodeCrypto from 'node:crypto'
import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { hmacPads, PADS_MAX_BODY } from './hmac-pads.js'
import { nodeCryptoProvider } from './node-crypto-provider.js'

const reference = (secret: string, body: Uint8Array | string) => createHmac('sha256', secret).update(body).digest('hex')

describe('hmacPads: HMAC-SHA256 from one-shot SHA-256 over precomputed key blocks', () => {
  const pads = hmacPads(nodeCrypto, Buffer)

  it('is available on this Node (one-shot hash) and equals createHmac for any secret and body', () => {
    expect(pads).toBeDefined()
    const kit = pads as NonNullable<typeof pads>
    fc.assert(
      fc.property(
        // Keys shorter than, equal to and longer than the 64-byte block, any Unicode (UTF-8 of up to 4 bytes a char).
        fc.oneof(fc.string({ maxLength: 80 }), fc.string({ unit: 'binary', minLength: 10, maxLength: 70 })),
        fc.uint8Array({ maxLength: 3000 }),
        (secret, body) => {
          expect(Buffer.from(kit.mac(kit.pads(secret), body)).toString('hex')).toBe(reference(secret, body))
        },
      ),
      { numRuns: 500 },
    )
  })

  it('gives the same bytes at the size limit, and leaves nothing of a longer body behind for a shorter one', () => {
    const kit = pads as NonNullable<typeof pads>
    const keyPads = kit.pads('whsec_limit')
    const long = nodeCrypto.randomBytes(PADS_MAX_BODY)
    const short = long.subarray(0, 17)
    expect(Buffer.from(kit.mac(keyPads, long)).toString('hex')).toBe(reference('whsec_limit', long))
    expect(Buffer.from(kit.mac(keyPads, short)).toString('hex')).toBe(reference('whsec_limit', short))
  })

  it('is undefined without one-shot hash (Node before 20.12), and the provider then uses createHmac', () => {
    const { hash: _hash, ...older } = nodeCrypto
    expect(hmacPads(older, Buffer)).toBeUndefined()
    const provider = nodeCryptoProvider(older, Buffer)
    const body = Buffer.from('{"event_id":"evt_1"}')
    expect(provider.match(['other', 'whsec_old'], body, reference('whsec_old', body))).toBe(1)
  })

  it('is undefined when the runtime’s hash disagrees with createHmac, so a broken runtime never verifies through it', () => {
    const wrong = {
      ...nodeCrypto,
      hash: (_algorithm: string, _data: unknown, encoding?: string) => 'x'.repeat(encoding === 'hex' ? 64 : 32),
    }
    expect(hmacPads(wrong as unknown as typeof nodeCrypto, Buffer)).toBeUndefined()
  })
})

describe('nodeCryptoProvider.match with and without the pads', () => {
  const withPads = nodeCryptoProvider(nodeCrypto, Buffer)
  const without = nodeCryptoProvider(nodeCrypto, Buffer, { pads: false })
  const secrets = ['whsec_new', 'whsec_old']

  it.each([
    ['a webhook body', Buffer.from('{"event_type":"transaction_settled","event_id":"evt_1"}')],
    ['a body over the pads’ limit', nodeCrypto.randomBytes(PADS_MAX_BODY + 1)],
    ['a string body', '{"event_id":"evt_\u00e9"}'],
  ])('finds the secret that signed %s, in either case of hex, and refuses one bit off', (_name, body) => {
    for (const provider of [withPads, without]) {
      expect(provider.match(secrets, body, reference('whsec_old', body))).toBe(1)
      expect(provider.match(secrets, body, reference('whsec_new', body).toUpperCase())).toBe(0)
      const off = reference('whsec_new', body).replace(/^./, (c) => (c === '0' ? '1' : '0'))
      expect(provider.match(secrets, body, off)).toBe(-1)
    }
  })
})

describe('hmacPads on a Buffer without its latin1 writer', () => {
  it('writes through write(text, offset, "latin1") and gives the same bytes', () => {
    const alloc = (size: number) => {
      const bytes = Buffer.alloc(size)
      // Node's own write() goes through latin1Write: write through a second view of the same memory instead.
      const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length)
      Object.defineProperty(bytes, 'latin1Write', { value: undefined })
      Object.defineProperty(bytes, 'write', {
        value: (text: string, offset: number, encoding: 'latin1') => view.write(text, offset, encoding),
      })
      return bytes
    }
    const kit = hmacPads(nodeCrypto, { from: Buffer.from, alloc } as unknown as typeof Buffer)
    expect(kit).toBeDefined()
    const body = Buffer.from('{"event_id":"evt_plain_write"}')
    const mac = (kit as NonNullable<typeof kit>).mac((kit as NonNullable<typeof kit>).pads('whsec_w'), body)
    expect(Buffer.from(mac).toString('hex')).toBe(reference('whsec_w', body))
  })
})
