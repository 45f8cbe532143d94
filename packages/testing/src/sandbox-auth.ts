/** A reseller account of the sandbox: its API key and the merchants it acts for. */
export interface SandboxReseller {
  /** The reseller key: a number, a pipe, then a string, as in `1001|s3cret`. */
  key: string
  /** Merchants this reseller may act for (with `Service-Merchant-Id`) and gets events of. */
  merchantIds: number[]
}

/** A merchant account of the sandbox, for `basic <username>:<apiKey>` authorization. */
export interface SandboxMerchant {
  id: number
  username: string
  apiKey: string
}

/** Accounts the sandbox accepts, and the secret of test webhooks sent to urls no subscription uses. */
export interface SandboxCredentials {
  resellers: SandboxReseller[]
  merchants: SandboxMerchant[]
  testSecret: string
}

/**
 * Accounts used when `createSandbox` is given none.
 *
 * @example
 * const [reseller] = defaultSandboxCredentials.resellers
 * await fetch(`${url}/ps/webhook/subscriptions`, { headers: { authorization: `reseller ${reseller.key}` } })
 */
export const defaultSandboxCredentials: Readonly<SandboxCredentials> = Object.freeze({
  resellers: [{ key: '1001|sandbox-reseller-key', merchantIds: [1234, 5678] }],
  merchants: [
    { id: 1234, username: 'merchant1234', apiKey: 'sandbox-merchant-key-1234' },
    { id: 5678, username: 'merchant5678', apiKey: 'sandbox-merchant-key-5678' },
  ],
  testSecret: 'sandbox-test-secret',
})

const RESELLER_KEY = /^\d+\|.+$/
const MERCHANT_ID = /^\d{1,15}$/

/** Who is calling, once the Authorization and Service-Merchant-Id headers are checked. */
export type Caller =
  | { kind: 'reseller'; reseller: SandboxReseller; merchantId: number | undefined }
  | { kind: 'merchant'; merchant: SandboxMerchant; merchantId: number }

/** A failed sandbox request, answered with `status` and `{ error: { message } }`. */
export class SandboxHttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

/** Scope that owns a subscription: the reseller itself, or one merchant. */
export type ScopeKey = `reseller:${string}` | `merchant:${number}`

export function scopeOf(caller: Caller): ScopeKey {
  return caller.kind === 'reseller' && caller.merchantId === undefined
    ? `reseller:${caller.reseller.key}`
    : `merchant:${caller.merchantId as number}`
}

export function checkCredentials(credentials: SandboxCredentials): void {
  for (const reseller of credentials.resellers) {
    if (typeof reseller.key !== 'string' || !RESELLER_KEY.test(reseller.key)) {
      throw new TypeError('createSandbox: a reseller key is a number, a pipe, then a string, such as 1001|s3cret')
    }
    if (!Array.isArray(reseller.merchantIds) || !reseller.merchantIds.every((id) => Number.isSafeInteger(id))) {
      throw new TypeError('createSandbox: reseller merchantIds must be integers')
    }
  }
  for (const merchant of credentials.merchants) {
    if (
      !Number.isSafeInteger(merchant.id) ||
      !merchant.username ||
      !merchant.apiKey ||
      merchant.username.includes(':')
    ) {
      throw new TypeError('createSandbox: a merchant needs an integer id, a username without ":" and an apiKey')
    }
  }
  if (!credentials.testSecret) throw new TypeError('createSandbox: testSecret must be a non-empty string')
}

function looksBase64(value: string): boolean {
  if (!/^[A-Za-z0-9+/]+=*$/.test(value)) return false
  return Buffer.from(value, 'base64').toString('utf8').includes(':')
}

/**
 * Section 5 of the spec: `reseller <number>|<string>` or `basic <username>:<key>` (not base 64),
 * plus the numeric `Service-Merchant-Id` header when a reseller acts for a merchant.
 */
export function authenticate(
  credentials: SandboxCredentials,
  authorization: string | undefined,
  merchantHeader: string | undefined,
): Caller {
  if (!authorization) throw new SandboxHttpError(401, 'missing Authorization header')
  const space = authorization.indexOf(' ')
  const scheme = space < 0 ? authorization : authorization.slice(0, space)
  const value = space < 0 ? '' : authorization.slice(space + 1)
  // Credentials are checked before the merchant header, so a bad key is always a 401.
  const merchantIdOf = (): number | undefined => {
    if (merchantHeader === undefined) return undefined
    const trimmed = merchantHeader.trim()
    if (!MERCHANT_ID.test(trimmed)) throw new SandboxHttpError(400, 'Service-Merchant-Id must be a numeric merchant id')
    return Number(trimmed)
  }
  switch (scheme.toLowerCase()) {
    case 'reseller': {
      if (!RESELLER_KEY.test(value)) {
        throw new SandboxHttpError(
          401,
          'a reseller key is a number, a pipe, then a string: Authorization: reseller 1001|key',
        )
      }
      const reseller = credentials.resellers.find((r) => r.key === value)
      if (!reseller) throw new SandboxHttpError(401, 'unknown reseller key')
      const merchantId = merchantIdOf()
      if (merchantId !== undefined && !reseller.merchantIds.includes(merchantId)) {
        throw new SandboxHttpError(403, `merchant ${merchantId} is not a merchant of this reseller`)
      }
      return { kind: 'reseller', reseller, merchantId }
    }
    case 'basic': {
      const colon = value.indexOf(':')
      if (colon < 0) {
        throw new SandboxHttpError(
          401,
          looksBase64(value)
            ? 'basic credentials are sent as plain username:key, not base 64 encoded'
            : 'basic credentials are username:key',
        )
      }
      const username = value.slice(0, colon)
      const apiKey = value.slice(colon + 1)
      const merchant = credentials.merchants.find((m) => m.username === username && m.apiKey === apiKey)
      if (!merchant) throw new SandboxHttpError(401, 'unknown merchant username or API key')
      const merchantId = merchantIdOf()
      if (merchantId !== undefined && merchantId !== merchant.id) {
        throw new SandboxHttpError(403, `merchant credentials cannot act for merchant ${merchantId}`)
      }
      return { kind: 'merchant', merchant, merchantId: merchant.id }
    }
    default:
      throw new SandboxHttpError(401, 'Authorization must be "reseller <key>" or "basic <username>:<key>"')
  }
}
