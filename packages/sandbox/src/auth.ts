import { SandboxHttpError } from './errors.js'
import type { SandboxCredentials, SandboxMerchant, SandboxReseller } from './types.js'

/** `<number>|<string>`, the shape of a reseller key (spec 5). */
export const RESELLER_KEY = /^\d+\|.+$/
const MERCHANT_ID = /^\d{1,15}$/

/** Who is calling, once the Authorization and Service-Merchant-Id headers are checked. */
export type Caller =
  | { kind: 'reseller'; reseller: SandboxReseller; merchantId: number | undefined }
  | { kind: 'merchant'; merchant: SandboxMerchant; merchantId: number }

/** Scope that owns a subscription: the reseller itself, or one merchant. */
export type ScopeKey = `reseller:${string}` | `merchant:${number}`

export function scopeOf(caller: Caller): ScopeKey {
  return caller.kind === 'reseller' && caller.merchantId === undefined
    ? `reseller:${caller.reseller.key}`
    : `merchant:${caller.merchantId as number}`
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
