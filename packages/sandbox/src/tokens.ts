import { createHmac, randomBytes } from 'node:crypto'
import type { Caller } from './auth.js'
import type { Clock } from './clock.js'

/** Issues the client token of `POST /ps/auth/reseller_client_token` for `merchantId`. */
export type TokenIssuer = (caller: Caller, merchantId: number) => { token: string; expires: string }

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')

/**
 * Client tokens as HS256 JWTs (claims `sub` = merchant id, `reseller_id`, `iat`, `exp`) signed with a
 * key drawn per sandbox, expiring `ttlMs` after issue on the sandbox clock.
 */
export function createTokenIssuer(clock: Clock, ttlMs: number): TokenIssuer {
  const tokenSecret = randomBytes(32)
  return (caller, merchantId) => {
    const issued = clock.now()
    const expires = issued + ttlMs
    const reseller = caller.kind === 'reseller' ? caller.reseller.key.split('|')[0] : undefined
    const unsigned = `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({
      iss: 'payhooks-sandbox',
      sub: String(merchantId),
      reseller_id: reseller,
      iat: Math.floor(issued / 1000),
      exp: Math.floor(expires / 1000),
    })}`
    const signature = createHmac('sha256', tokenSecret).update(unsigned).digest('base64url')
    return { token: `${unsigned}.${signature}`, expires: new Date(expires).toISOString() }
  }
}
