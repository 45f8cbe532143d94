// Checks of what createClient and per-call options are given, before anything is sent. Each throws a
// fixed message that names the caller (`where`) and never quotes a credential.
import type { ClientOptions } from './api.js'

/** The longest delay `AbortSignal.timeout` (a timer) accepts. */
const MAX_TIMEOUT_MS = 2_147_483_647
const RESELLER_KEY = /^\d+\|[\x21-\x7e]+$/
const VISIBLE_ASCII = /^[\x21-\x7e]+$/

/** Credentials that passed the checks. */
export type CheckedAuth =
  | { scheme: 'reseller'; resellerKey: string }
  | { scheme: 'basic'; username: string; apiKey: string }

/** {@link ClientOptions} after the checks; `timeoutMs` is still unset when not given. */
export interface CheckedOptions {
  baseUrl: string
  auth: CheckedAuth
  timeoutMs: number | undefined
  fetch: typeof globalThis.fetch | undefined
  merchantId: number | undefined
}

/** All of createClient's checks, in this order: options, baseUrl, auth, timeoutMs, fetch, merchantId. */
export function checkClientOptions(options: ClientOptions): CheckedOptions {
  if (typeof options !== 'object' || options === null) throw new TypeError('createClient: options are required')
  const checked: CheckedOptions = {
    baseUrl: checkBaseUrl(options.baseUrl),
    auth: checkAuth(options.auth),
    timeoutMs: options.timeoutMs === undefined ? undefined : checkTimeout(options.timeoutMs, 'createClient'),
    fetch: options.fetch,
    merchantId: undefined,
  }
  if (checked.fetch !== undefined && typeof checked.fetch !== 'function') {
    throw new TypeError('createClient: fetch must be a function')
  }
  if (options.merchantId !== undefined) checked.merchantId = checkMerchantId(options.merchantId, 'createClient')
  return checked
}

export function checkTimeout(value: unknown, where: string): number {
  if (typeof value !== 'number' || !(value > 0 && value <= MAX_TIMEOUT_MS)) {
    throw new RangeError(`${where}: timeoutMs must be a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS}`)
  }
  return value
}

/** A positive safe integer, or a string of digits naming one. */
export function checkMerchantId(value: unknown, where: string): number {
  const id = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id <= 0) {
    throw new TypeError(`${where}: merchant id must be a positive integer (the numeric merchant id)`)
  }
  return id
}

/** An absolute http(s) URL without credentials, query or fragment; returned without trailing slashes. */
function checkBaseUrl(value: unknown): string {
  let url: URL
  try {
    url = new URL(String(value))
  } catch {
    throw new TypeError('createClient: baseUrl must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError('createClient: baseUrl must be an http(s) URL')
  }
  if (url.username || url.password) throw new TypeError('createClient: baseUrl must not carry credentials; use auth')
  if (url.search || url.hash) throw new TypeError('createClient: baseUrl must not have a query or a fragment')
  return url.href.replace(/\/+$/, '')
}

/** Errors describe the problem without quoting the value: a mistyped key is still mostly a key. */
function checkAuth(auth: unknown): CheckedAuth {
  if (typeof auth !== 'object' || auth === null) {
    throw new TypeError('createClient: auth must be { resellerKey } or { username, apiKey }')
  }
  const { resellerKey, username, apiKey } = auth as Record<string, unknown>
  if (resellerKey !== undefined && (username !== undefined || apiKey !== undefined)) {
    throw new TypeError('createClient: auth takes either { resellerKey } or { username, apiKey }, not both')
  }
  if (resellerKey !== undefined) {
    if (typeof resellerKey !== 'string' || !RESELLER_KEY.test(resellerKey)) {
      throw new TypeError(
        `createClient: auth.resellerKey must be digits, a "|", then a string without spaces (like 12|AbC…); the value given (${describe(resellerKey)}) is not`,
      )
    }
    return { scheme: 'reseller', resellerKey }
  }
  if (typeof username !== 'string' || !VISIBLE_ASCII.test(username) || username.includes(':')) {
    throw new TypeError(
      'createClient: auth.username must be a non-empty string of visible ASCII characters without ":" or spaces',
    )
  }
  if (typeof apiKey !== 'string' || !VISIBLE_ASCII.test(apiKey)) {
    throw new TypeError('createClient: auth.apiKey must be a non-empty string of visible ASCII characters, no spaces')
  }
  return { scheme: 'basic', username, apiKey }
}

function describe(value: unknown): string {
  return typeof value === 'string' ? `${value.length} characters, not shown` : `a ${typeof value}`
}
