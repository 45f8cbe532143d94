import { createRedactor, type Redactor } from './redact.js'
import type { CheckedAuth } from './validations.js'

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
  /** Keeps every form of the credentials out of errors. */
  redactor: Redactor
}

/** Builds the Authorization header and the redactor of credentials that passed `checkClientOptions`. */
export function resolveAuth(auth: CheckedAuth): ResolvedAuth {
  if (auth.scheme === 'reseller') {
    const key = auth.resellerKey
    // The part after the pipe is the actual secret; a service may echo it alone.
    const tail = key.slice(key.indexOf('|') + 1)
    const redactor = createRedactor([
      { value: key, label: 'the reseller key', shaped: true },
      { value: tail, label: 'the secret part of the reseller key' },
    ])
    return { scheme: 'reseller', header: `reseller ${key}`, resellerKey: key, redactor }
  }
  const { username, apiKey } = auth
  const redactor = createRedactor([
    { value: `${username}:${apiKey}`, label: 'username:key', shaped: true },
    { value: apiKey, label: 'the API key' },
  ])
  // The spec's basic scheme is NOT base 64: the header is literally `basic <username>:<key>`.
  return { scheme: 'basic', header: `basic ${username}:${apiKey}`, redactor }
}
