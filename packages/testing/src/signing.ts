import { SIGNATURE_HEADER, sign } from '@payhooks/core'

/** A body and the headers the service would send with it. */
export interface SignedDelivery {
  body: string
  headers: { 'content-type': 'application/json'; [SIGNATURE_HEADER]: string }
}

/**
 * Serializes `event` once and signs those exact bytes, as the service does.
 *
 * @example
 * const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), secret)
 * await fetch(url, { method: 'POST', body, headers })
 */
export async function signedDelivery(event: unknown, secret: string): Promise<SignedDelivery> {
  const body = typeof event === 'string' ? event : JSON.stringify(event)
  return { body, headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: await sign(secret, body) } }
}

/** A web-standard signed POST, for `webhooks.handle()` and fetch-style apps. */
export async function signedRequest(
  event: unknown,
  secret: string,
  url = 'http://localhost/webhooks',
): Promise<Request> {
  const { body, headers } = await signedDelivery(event, secret)
  return new Request(url, { method: 'POST', body, headers })
}
