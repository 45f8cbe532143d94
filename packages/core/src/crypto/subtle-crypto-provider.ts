import { bytesToHex, type CryptoProvider, DIGEST_BYTES, hexToBytes, type RawBody } from './crypto-provider.js'

const KEY_CACHE_LIMIT = 64
const encoder = new TextEncoder()

/**
 * {@link CryptoProvider} on Web Crypto's `SubtleCrypto` (Workers, browsers, anywhere without `node:crypto`):
 * asynchronous. Imported keys are cached for the last 64 secrets.
 *
 * @example
 * const provider = subtleCryptoProvider(globalThis.crypto.subtle)
 */
export function subtleCryptoProvider(subtle: SubtleCrypto = globalThis.crypto.subtle): CryptoProvider {
  const keys = new Map<string, Promise<CryptoKey>>()

  function keyFor(secret: string): Promise<CryptoKey> {
    let key = keys.get(secret)
    if (!key) {
      if (keys.size >= KEY_CACHE_LIMIT) keys.delete(keys.keys().next().value as string)
      key = subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
      keys.set(secret, key)
    }
    return key
  }

  async function digest(secret: string, body: RawBody): Promise<Uint8Array> {
    const bytes = typeof body === 'string' ? encoder.encode(body) : body
    return new Uint8Array(await subtle.sign('HMAC', await keyFor(secret), bytes as BufferSource))
  }

  function equal(a: Uint8Array, b: Uint8Array): boolean {
    if (a.length !== b.length) return false
    let diff = 0
    for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number)
    return diff === 0
  }

  return {
    name: 'Web Crypto',
    sign: async (secret, body) => bytesToHex(await digest(secret, body)),
    async digest(body) {
      const bytes = typeof body === 'string' ? encoder.encode(body) : body
      const hashed = new Uint8Array(await subtle.digest('SHA-256', bytes as BufferSource))
      return bytesToHex(hashed, DIGEST_BYTES).toLowerCase()
    },
    async match(secrets, body, signature) {
      const expected = hexToBytes(signature)
      for (let i = 0; i < secrets.length; i++) {
        if (equal(await digest(secrets[i] as string, body), expected)) return i
      }
      return -1
    },
  }
}
