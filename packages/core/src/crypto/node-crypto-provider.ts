import { type CryptoProvider, DIGEST_BYTES, type RawBody } from './crypto-provider.js'
import { hmacPads, PADS_MAX_BODY, type Pads } from './hmac-pads.js'
import type { NodeBuffer, NodeCrypto } from './node-types.js'

export type { NodeBuffer, NodeCrypto } from './node-types.js'

type HmacKey = Parameters<NodeCrypto['createHmac']>[1]

/** Most secrets kept prepared; a secret resolver answering with ever new secrets only refills the cache. */
const MAX_KEYS = 64

/** `make(secret)`, kept for the next delivery under the same secret (at most {@link MAX_KEYS} secrets). */
function perSecret<T>(make: (secret: string) => T): (secret: string) => T {
  const kept = new Map<string, T>()
  return (secret) => {
    let value = kept.get(secret)
    if (value === undefined) {
      if (kept.size >= MAX_KEYS) kept.clear()
      value = make(secret)
      kept.set(secret, value)
    }
    return value
  }
}

/**
 * {@link CryptoProvider} on `node:crypto` (Node, Bun, Deno): synchronous, about 20x cheaper per HMAC than Web
 * Crypto on Node. Takes the modules rather than importing them, so the main entry has no static `node:` import.
 *
 * @example
 * import { Buffer } from 'node:buffer'
 * import * as crypto from 'node:crypto'
 * const provider = nodeCryptoProvider(crypto, Buffer)
 */
export function nodeCryptoProvider(
  crypto: NodeCrypto,
  buffer: NodeBuffer,
  options: { pads?: boolean } = {},
): CryptoProvider {
  const { createHmac, createHash, timingSafeEqual, createSecretKey, hash } = crypto
  const hexLength = DIGEST_BYTES * 2
  // A KeyObject spares HMAC the conversion of the secret on every delivery: about 12% of each HMAC here.
  const keyOf: (secret: string) => HmacKey = createSecretKey
    ? perSecret((secret) => createSecretKey(secret, 'utf8'))
    : (secret) => secret
  const fast = options.pads === false ? undefined : hmacPads(crypto, buffer)
  const padsOf = perSecret((secret): Pads => (fast as NonNullable<typeof fast>).pads(secret))
  const macOf = (secret: string, body: RawBody): Uint8Array =>
    fast && typeof body !== 'string' && body.length <= PADS_MAX_BODY
      ? fast.mac(padsOf(secret), body)
      : createHmac('sha256', keyOf(secret)).update(body).digest()
  return {
    name: 'node:crypto',
    // One-shot `hash` (Node 20.12+) to hex is about 3x cheaper here than a Hash object and a Buffer.
    digest: hash
      ? (body: RawBody) => hash('sha256', body, 'hex').slice(0, hexLength)
      : (body: RawBody) => createHash('sha256').update(body).digest('hex').slice(0, hexLength),
    sign: (secret: string, body: RawBody) => createHmac('sha256', secret).update(body).digest('hex').toUpperCase(),
    match(secrets: readonly string[], body: RawBody, signature: string): number {
      const expected = buffer.from(signature, 'hex')
      if (expected.length !== 32) return -1
      for (let i = 0; i < secrets.length; i++) {
        if (timingSafeEqual(macOf(secrets[i] as string, body), expected)) return i
      }
      return -1
    },
  }
}
