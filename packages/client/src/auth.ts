/** Reseller authorization: one key for all of the reseller's merchants (spec 5). */
export interface ResellerAuth {
  /** The reseller API key: digits, `|`, then a string, such as `12|Xk3…`. */
  resellerKey: string
  username?: never
  apiKey?: never
}

/** Merchant authorization: the API username and key of one merchant account (spec 5). */
export interface MerchantAuth {
  username: string
  apiKey: string
  resellerKey?: never
}

/**
 * Either authorization scheme of the spec.
 *
 * @example
 * const auth: ClientAuth = process.env.RESELLER_KEY
 *   ? { resellerKey: process.env.RESELLER_KEY }
 *   : { username: process.env.API_USERNAME!, apiKey: process.env.API_KEY! }
 */
export type ClientAuth = ResellerAuth | MerchantAuth

export interface ResolvedAuth {
  scheme: 'reseller' | 'basic'
  /** The Authorization header value. */
  header: string
  /** Only for the client token body, which carries the reseller key. */
  resellerKey?: string
  /** Replaces every secret in a text with `[redacted]`. */
  redact: (text: string) => string
}

const RESELLER_KEY = /^\d+\|[\x21-\x7e]+$/
const VISIBLE_ASCII = /^[\x21-\x7e]+$/
const REDACTED = '[redacted]'

function describe(value: unknown): string {
  return typeof value === 'string' ? `${value.length} characters, not shown` : `a ${typeof value}`
}

/**
 * Checks the credentials and builds the header. Errors describe the problem without quoting the
 * value: a mistyped key is still mostly a key.
 */
export function resolveAuth(auth: ClientAuth): ResolvedAuth {
  if (typeof auth !== 'object' || auth === null) {
    throw new TypeError('createClient: auth must be { resellerKey } or { username, apiKey }')
  }
  const hasReseller = auth.resellerKey !== undefined
  const hasMerchant = auth.username !== undefined || auth.apiKey !== undefined
  if (hasReseller && hasMerchant) {
    throw new TypeError('createClient: auth takes either { resellerKey } or { username, apiKey }, not both')
  }
  if (hasReseller) {
    const key = auth.resellerKey
    if (typeof key !== 'string' || !RESELLER_KEY.test(key)) {
      throw new TypeError(
        `createClient: auth.resellerKey must be digits, a "|", then a string without spaces (like 12|AbC…); the value given (${describe(key)}) is not`,
      )
    }
    // The part after the pipe is the actual secret; a service may echo it alone.
    const tail = key.slice(key.indexOf('|') + 1)
    const secrets = tail.length >= 8 ? [key, tail] : [key]
    return { scheme: 'reseller', header: `reseller ${key}`, resellerKey: key, redact: redactor(secrets) }
  }
  const { username, apiKey } = auth as Partial<MerchantAuth>
  if (typeof username !== 'string' || !VISIBLE_ASCII.test(username) || username.includes(':')) {
    throw new TypeError(
      'createClient: auth.username must be a non-empty string of visible ASCII characters without ":" or spaces',
    )
  }
  if (typeof apiKey !== 'string' || !VISIBLE_ASCII.test(apiKey)) {
    throw new TypeError('createClient: auth.apiKey must be a non-empty string of visible ASCII characters, no spaces')
  }
  // The spec's basic scheme is NOT base 64: the header is literally `basic <username>:<key>`.
  return { scheme: 'basic', header: `basic ${username}:${apiKey}`, redact: redactor([`${username}:${apiKey}`, apiKey]) }
}

function redactor(secrets: string[]): (text: string) => string {
  const list = secrets.filter((s) => s.length > 0).sort((a, b) => b.length - a.length)
  return (text) => {
    let out = text
    for (const secret of list) out = out.split(secret).join(REDACTED)
    return out
  }
}
