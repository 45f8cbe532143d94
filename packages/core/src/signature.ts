/** Name of the header that carries the signature (section 6.2 of the spec). Header lookups are case-insensitive. */
export const SIGNATURE_HEADER = 'service-hmac-sha256'

type NodeCrypto = typeof import('node:crypto')

// `process.getBuiltinModule` exists on Node >= 20.16, Bun and Deno; elsewhere (Workers without
// nodejs_compat, browsers) we fall back to Web Crypto. node:crypto is ~20x cheaper per HMAC on Node.
const nodeCrypto: NodeCrypto | undefined = (
  globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }
).process?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined

/** Which HMAC implementation this runtime uses. */
export const hmacBackend: 'node:crypto' | 'Web Crypto' = nodeCrypto ? 'node:crypto' : 'Web Crypto'

const encoder = new TextEncoder()
const HEX_64 = /^[0-9A-Fa-f]{64}$/
const keyCache = new Map<string, Promise<CryptoKey>>()
const KEY_CACHE_LIMIT = 64

/** Raw request body as received: the bytes, or (only if you really have nothing else) the exact string. */
export type RawBody = Uint8Array | string

function toBytes(body: RawBody): Uint8Array {
  return typeof body === 'string' ? encoder.encode(body) : body
}

function webKey(secret: string): Promise<CryptoKey> {
  let key = keyCache.get(secret)
  if (!key) {
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.delete(keyCache.keys().next().value as string)
    key = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
    keyCache.set(secret, key)
  }
  return key
}

/** HMAC-SHA256 digest bytes; synchronous on Node, a promise on Web Crypto. */
function digest(secret: string, body: RawBody): Uint8Array | Promise<Uint8Array> {
  if (nodeCrypto) return nodeCrypto.createHmac('sha256', secret).update(body).digest()
  return webKey(secret).then(
    async (key) => new Uint8Array(await crypto.subtle.sign('HMAC', key, toBytes(body) as BufferSource)),
  )
}

function toHex(bytes: Uint8Array): string {
  if (nodeCrypto) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex').toUpperCase()
  let out = ''
  for (const b of bytes) out += (b < 16 ? '0' : '') + b.toString(16)
  return out.toUpperCase()
}

function fromHex(hex: string): Uint8Array {
  if (nodeCrypto) return Buffer.from(hex, 'hex')
  const out = new Uint8Array(hex.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16)
  return out
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  if (nodeCrypto) return nodeCrypto.timingSafeEqual(a, b)
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= (a[i] as number) ^ (b[i] as number)
  return diff === 0
}

/**
 * Computes the `service-hmac-sha256` header value for a body: HMAC-SHA256 keyed with the
 * subscription's `signature_secret`, as upper-case hex.
 *
 * @example
 * const header = await sign(process.env.WEBHOOK_SECRET, body)
 * await fetch(url, { method: 'POST', body, headers: { 'service-hmac-sha256': header } })
 */
export async function sign(secret: string, body: RawBody): Promise<string> {
  if (!secret) throw new TypeError('sign: secret must be a non-empty string')
  return toHex(await digest(secret, body))
}

/** Whether `signature` is shaped like a digest: exactly 64 hex characters. */
export function isSignatureShaped(signature: string | null | undefined): signature is string {
  return typeof signature === 'string' && HEX_64.test(signature)
}

/**
 * Index of the first secret whose signature matches, or -1. Synchronous on Node (no promise is
 * created), so the receiver's hot path stays cheap; `signature` must already be shape-checked.
 */
export function matchSecret(secrets: readonly string[], body: RawBody, signature: string): number | Promise<number> {
  const expected = fromHex(signature)
  if (nodeCrypto) {
    for (let i = 0; i < secrets.length; i++) {
      if (equalBytes(digest(secrets[i] as string, body) as Uint8Array, expected)) return i
    }
    return -1
  }
  return (async () => {
    for (let i = 0; i < secrets.length; i++) {
      if (equalBytes(await digest(secrets[i] as string, body), expected)) return i
    }
    return -1
  })()
}

/**
 * Checks a `service-hmac-sha256` header against the raw body, in constant time. Accepts one secret
 * or several (rotation, or several subscriptions posting to one route). Never pass re-serialized
 * JSON: the service signs the exact bytes it sent.
 *
 * @example
 * const ok = await verify(process.env.WEBHOOK_SECRET, rawBody, req.headers['service-hmac-sha256'])
 * if (!ok) return res.status(401).end()
 */
export async function verify(
  secret: string | readonly string[],
  body: RawBody,
  signature: string | null | undefined,
): Promise<boolean> {
  const secrets = typeof secret === 'string' ? [secret] : secret
  if (secrets.length === 0 || secrets.some((s) => !s)) throw new TypeError('verify: secrets must be non-empty strings')
  if (!isSignatureShaped(signature)) return false
  return (await matchSecret(secrets, body, signature)) >= 0
}
