/** Raw request body as received: the bytes, or (only if you really have nothing else) the exact string. */
export type RawBody = Uint8Array | string

/**
 * The HMAC-SHA256 computations payhooks needs, chosen once per runtime: {@link nodeCryptoProvider} where
 * `node:crypto` exists (synchronous, no promise per delivery), {@link subtleCryptoProvider} elsewhere.
 * A method may answer synchronously or with a promise; callers check which.
 */
export interface CryptoProvider {
  /** Which implementation this is. */
  readonly name: 'node:crypto' | 'Web Crypto'
  /** HMAC-SHA256 of `body` keyed with `secret`, as upper-case hex. */
  sign(secret: string, body: RawBody): string | Promise<string>
  /**
   * Index of the first secret whose HMAC of `body` equals `signature` (compared in constant time), or -1.
   * `signature` must already be shape-checked: 64 hex characters, either case.
   */
  match(secrets: readonly string[], body: RawBody, signature: string): number | Promise<number>
  /**
   * The body's digest stores keep with its done marker: the first 16 bytes of SHA-256 of `body` (a string as
   * UTF-8), as 32 lower-case hex characters. Keyed by nothing, so it is the same under every secret.
   */
  digest(body: RawBody): string | Promise<string>
}

/** Bytes of SHA-256 the body digest keeps: 128 bits, so distinct bodies never meet by chance. */
export const DIGEST_BYTES = 16

const HEX_DIGITS = '0123456789ABCDEF'
const BYTE_TO_HEX = Array.from({ length: 256 }, (_, b) => `${HEX_DIGITS[b >> 4]}${HEX_DIGITS[b & 15]}`)

/** Upper-case hex of `bytes` (its first `length`). */
export function bytesToHex(bytes: Uint8Array, length = bytes.length): string {
  let out = ''
  for (let i = 0; i < length; i++) out += BYTE_TO_HEX[bytes[i] as number]
  return out
}

function nibble(code: number): number {
  if (code >= 48 && code <= 57) return code - 48 // 0-9
  if (code >= 65 && code <= 70) return code - 55 // A-F
  return code - 87 // a-f; the caller has shape-checked the string
}

/** Bytes of a hex string already checked to be even-length hex (see `isSignatureShaped`). */
export function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1)
  for (let i = 0; i < out.length; i++) out[i] = (nibble(hex.charCodeAt(2 * i)) << 4) | nibble(hex.charCodeAt(2 * i + 1))
  return out
}
