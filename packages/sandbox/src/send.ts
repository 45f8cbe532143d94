// One signed POST to a receiver, as the service sends it (spec 6): the exact bytes, their signature,
// the 10 s limit, no redirects, and never to a link-local or metadata address.
import { SIGNATURE_HEADER, sign } from '@payhooks/core'
import { resolvesToRefused } from './targets.js'

/** Result of one POST, before it is logged. */
export interface PostResult {
  ok: boolean
  status?: number
  error?: string
  latencyMs: number
  response?: string
  /** The `service-hmac-sha256` header sent. */
  signature: string
  /** True when the host resolved to a link-local or metadata address, so nothing was sent. */
  refused?: true
}

/**
 * JSON with every non-ASCII character escaped, so the body is pure ASCII as spec 6.2 signs it,
 * and the bytes are the same whatever encoding a receiver assumes.
 */
export function serializeEvent(event: unknown): string {
  return JSON.stringify(event).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/** fetch only says "fetch failed"; the reason (ECONNREFUSED, bad port, ...) is in its cause. */
function describeError(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause
  if (cause?.code) return `${cause.code}${cause.message ? `: ${cause.message}` : ''}`
  if (cause?.message) return cause.message
  return error instanceof Error ? error.message : String(error)
}

/** Resolves with `work`, or with undefined once `signal` aborts (a DNS lookup cannot be aborted). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  if (signal.aborted) return Promise.resolve(undefined)
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

/** POSTs `body` signed with `secret`, waiting at most `timeoutMs` for the status. */
export async function postSigned(
  url: string,
  secret: string,
  body: string,
  timeoutMs: number,
  stop?: AbortSignal,
): Promise<PostResult> {
  const bytes = new TextEncoder().encode(body)
  const signature = await sign(secret, bytes)
  const headers = {
    'content-type': 'application/json',
    [SIGNATURE_HEADER]: signature,
    'user-agent': 'payhooks-sandbox',
  }
  const timeout = AbortSignal.timeout(timeoutMs)
  const signal = stop ? AbortSignal.any([timeout, stop]) : timeout
  const started = performance.now()
  const elapsed = () => Math.round(performance.now() - started)
  try {
    if (await untilAborted(resolvesToRefused(url), signal)) {
      return {
        ok: false,
        error: 'not sent: the host resolves to a link-local or metadata address',
        latencyMs: 0,
        signature,
        refused: true,
      }
    }
    signal.throwIfAborted()
    const response = await fetch(url, { method: 'POST', body: bytes, headers, signal, redirect: 'manual' })
    const latencyMs = elapsed()
    let text = ''
    try {
      text = await response.text()
    } catch {
      // The status arrived in time; a body cut short does not change the outcome.
    }
    const ok = response.status >= 200 && response.status < 300
    return { ok, status: response.status, latencyMs, signature, ...(text ? { response: text.slice(0, 500) } : {}) }
  } catch (error) {
    const reason = timeout.aborted
      ? `no answer within ${timeoutMs} ms`
      : stop?.aborted
        ? 'sandbox closed'
        : describeError(error)
    return { ok: false, error: reason, latencyMs: elapsed(), signature }
  }
}
