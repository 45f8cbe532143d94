import { createRedactor, type Redactor } from './redact.js'
import type { CheckedAuth } from './validations.js'

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
