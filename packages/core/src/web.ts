import { InternalError, PayloadTooLargeError, RawBodyUnavailableError } from './errors.js'
import type { RawBody } from './signature.js'
import type { HeaderLookup, WebhookResult, Webhooks } from './types.js'

/** The part of a `createWebhooks()` receiver a fetch-style adapter uses. */
export type WebReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'>

/** Options of {@link receiveWebRequest}. */
export interface WebRequestOptions {
  /**
   * The exact bytes an earlier layer kept, if any; `null` when it kept only a parsed form, so the signed bytes
   * are gone (answered 500 `raw_body_unavailable` with `fix`).
   */
  body?: RawBody | null
  /**
   * How to fix the app when the body was consumed without its bytes kept: one sentence, framework-specific.
   * @default 'Pass the request to payhooks before anything reads its body.'
   */
  fix?: string
}

const DEFAULT_FIX = 'Pass the request to payhooks before anything reads its body.'
const NO_OPTIONS: WebRequestOptions = {}

/**
 * Reads a web-standard request's body, or returns `undefined` once it passes `limit` bytes: refused
 * up front from `content-length` when it can, otherwise the stream is cancelled at the limit, so an
 * oversized body is never held in memory. For adapters on fetch-style runtimes.
 *
 * @example
 * const body = await readBody(request, webhooks.maxBodyBytes)
 * if (!body) return toResponse(webhooks.reject(new PayloadTooLargeError(webhooks.maxBodyBytes)))
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array | undefined> {
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > limit) return undefined
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > limit) {
      await reader.cancel()
      return undefined
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0]
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/** A web-standard `Response` for a receiver's answer. */
export function toResponse(result: WebhookResult): Response {
  return new Response(result.body, { status: result.status, headers: result.headers })
}

/**
 * Answers a web-standard `Request` (Workers, Deno, Bun, Hono, Next.js route handlers): uses the bytes an
 * earlier layer kept, or reads the body with {@link readBody} up to `webhooks.maxBodyBytes` (413 without
 * buffering the rest), refuses a body already consumed (500 with `fix`), then calls `webhooks.receive` and
 * returns its answer as a `Response`. Never rejects: anything unexpected is answered 500. The twin of
 * `receiveNodeRequest` from `@payhooks/core/node`; `webhooks.handle(request)` is this without options.
 *
 * @example
 * import { receiveWebRequest } from '@payhooks/core'
 * export default {
 *   fetch: (request: Request) => receiveWebRequest(webhooks, request, { fix: 'read no body before this' }),
 * }
 */
export async function receiveWebRequest(
  webhooks: WebReceiver,
  request: Request,
  options: WebRequestOptions = NO_OPTIONS,
): Promise<Response> {
  try {
    const method = request.method
    const getHeader: HeaderLookup = (name) => request.headers.get(name)
    let body = options.body
    if (method !== 'POST') body = ''
    else if (body === null) {
      const error = new RawBodyUnavailableError(`the request body was already parsed. ${options.fix ?? DEFAULT_FIX}`)
      return toResponse(webhooks.reject(error))
    } else if (body === undefined) {
      if (request.bodyUsed) {
        const error = new RawBodyUnavailableError(`the request body was already read. ${options.fix ?? DEFAULT_FIX}`)
        return toResponse(webhooks.reject(error))
      }
      body = await readBody(request, webhooks.maxBodyBytes)
      if (!body) return toResponse(webhooks.reject(new PayloadTooLargeError(webhooks.maxBodyBytes)))
    }
    return toResponse(await webhooks.receive({ method, body, getHeader }))
  } catch (error) {
    return toResponse(webhooks.reject(new InternalError(error)))
  }
}
