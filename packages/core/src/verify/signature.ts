import type { CryptoProvider, RawBody } from '../crypto/crypto-provider.js'
import { type NodeBuffer, type NodeCrypto, nodeCryptoProvider } from '../crypto/node-crypto-provider.js'
import { subtleCryptoProvider } from '../crypto/subtle-crypto-provider.js'

export type { RawBody } from '../crypto/crypto-provider.js'

export { SIGNATURE_HEADER } from '../service-contract.js'

// `process.getBuiltinModule` exists on Node >= 20.16, Bun and Deno; elsewhere (Workers without nodejs_compat,
// browsers) Web Crypto is used. Chosen once, here; nothing else in the main entry touches a `node:` module.
const runtime = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process
const builtinCrypto = runtime?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined
const builtinBuffer = (runtime?.getBuiltinModule?.('node:buffer') as { Buffer?: NodeBuffer } | undefined)?.Buffer

/** The HMAC implementation of this runtime. */
export const cryptoProvider: CryptoProvider =
  builtinCrypto && builtinBuffer ? nodeCryptoProvider(builtinCrypto, builtinBuffer) : subtleCryptoProvider()

/** Which HMAC implementation this runtime uses. */
export const hmacBackend: CryptoProvider['name'] = cryptoProvider.name

/**
 * Whether `signature` is shaped like a digest: exactly 64 hex characters. A loop over the character codes: the
 * equivalent regular expression cost about 0.5 µs per delivery under HTTP load.
 */
export function isSignatureShaped(signature: string | null | undefined): signature is string {
  if (typeof signature !== 'string' || signature.length !== 64) return false
  for (let i = 0; i < 64; i++) {
    const c = signature.charCodeAt(i)
    if (c >= 0x30 && c <= 0x39) continue
    const letter = c | 0x20 // A-F onto a-f
    if (letter < 0x61 || letter > 0x66) return false
  }
  return true
}

/** `sign` and `verify` on one {@link CryptoProvider}. */
export interface Signer {
  readonly hmacBackend: CryptoProvider['name']
  sign(secret: string, body: RawBody): Promise<string>
  verify(secret: string | readonly string[], body: RawBody, signature: string | null | undefined): Promise<boolean>
}

/** Binds the signature functions to `provider`; the module's own exports use {@link cryptoProvider}. */
export function createSigner(provider: CryptoProvider): Signer {
  return {
    hmacBackend: provider.name,
    async sign(secret, body) {
      if (!secret) throw new TypeError('sign: secret must be a non-empty string')
      return provider.sign(secret, body)
    },
    async verify(secret, body, signature) {
      const secrets = typeof secret === 'string' ? [secret] : secret
      if (secrets.length === 0 || secrets.some((s) => !s)) {
        throw new TypeError('verify: secrets must be non-empty strings')
      }
      if (!isSignatureShaped(signature)) return false
      return (await provider.match(secrets, body, signature)) >= 0
    },
  }
}

const signer = createSigner(cryptoProvider)

/**
 * Computes the `service-hmac-sha256` header value for a body: HMAC-SHA256 keyed with the
 * subscription's `signature_secret`, as upper-case hex.
 *
 * @example
 * const header = await sign(process.env.WEBHOOK_SECRET, body)
 * await fetch(url, { method: 'POST', body, headers: { 'service-hmac-sha256': header } })
 */
export const sign: (secret: string, body: RawBody) => Promise<string> = signer.sign

/**
 * Checks a `service-hmac-sha256` header against the raw body, in constant time. Accepts one secret
 * or several (rotation, or several subscriptions posting to one route). Never pass re-serialized
 * JSON: the service signs the exact bytes it sent.
 *
 * @example
 * const ok = await verify(process.env.WEBHOOK_SECRET, rawBody, req.headers['service-hmac-sha256'])
 * if (!ok) return res.status(401).end()
 */
export const verify: (
  secret: string | readonly string[],
  body: RawBody,
  signature: string | null | undefined,
) => Promise<boolean> = signer.verify
