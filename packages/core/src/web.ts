import { IncompleteBodyError, InternalError, PayloadTooLargeError, RawBodyUnavailableError } from './errors/index.js'
import { isUnsigned, missingSignature } from './refusals/unsigned.js'
import type { HeaderLookup, WebhookResult, Webhooks } from './types.js'
import type { RawBody } from './verify/signature.js'

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
  /**
   * The client's address, as the runtime knows it (Bun's `server.requestIP(request)`, Deno's `info.remoteAddr`,
   * Cloudflare's `cf-connecting-ip`): see {@link RawDelivery.remoteAddress}. A `Request` carries none.
   * @default none
   */
  remoteAddress?: string
}

const DEFAULT_FIX = 'Pass the request to payhooks before anything reads its body.'
const NO_OPTIONS: WebRequestOptions = {}

const EMPTY = new Uint8Array(0)
const ignore = () => {}
const encoder = new TextEncoder()
const BOM = [0xef, 0xbb, 0xbf]

/**
 * Reads `reader` to its end. Rejects with {@link PayloadTooLargeError} once it passes `limit` (the stream is
 * cancelled, so the rest is never held) and with {@link IncompleteBodyError} when the stream fails; resolves with
 * what arrived so far when `reader` is cancelled from outside (the deadline stopped the read).
 */
async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>, limit: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>
    try {
      chunk = await reader.read()
    } catch (error) {
      throw new IncompleteBodyError(error)
    }
    if (chunk.done) break
    const value = chunk.value
    total += value.byteLength
    if (total > limit) {
      reader.cancel().catch(ignore)
      throw new PayloadTooLargeError(limit)
    }
    chunks.push(value)
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array
  const bytes = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    bytes.set(chunk, offset)
    offset += chunk.byteLength
  }
  return bytes
}

/**
 * Reads a web-standard request's body, or returns `undefined` once it passes `limit` bytes: refused
 * up front from `content-length` when it can, otherwise the stream is cancelled at the limit, so an
 * oversized body is never held in memory. For adapters on fetch-style runtimes. (`receiveWebRequest` reads
 * under the receiver's deadline instead.)
 *
 * @example
 * const body = await readBody(request, webhooks.maxBodyBytes)
 * if (!body) return toResponse(webhooks.reject(new PayloadTooLargeError(webhooks.maxBodyBytes)))
 */
export async function readBody(request: Request, limit: number): Promise<Uint8Array | undefined> {
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > limit) return undefined
  if (!request.body) return EMPTY
  try {
    return await readAll(request.body.getReader(), limit)
  } catch (error) {
    if (error instanceof PayloadTooLargeError) return undefined
    throw error instanceof IncompleteBodyError ? error.cause : error
  }
}

/**
 * The body a UTF-8 decoder turned into `text`, as bytes when they can be told apart from the text's own: a
 * decoder drops a leading byte order mark, so when `contentLength` is exactly the three bytes of one more than
 * the text's UTF-8, they are put back and the signature is checked over the bytes as sent. Otherwise `text`
 * itself. For adapters that only find a body parser's decoded text (`@koa/bodyparser`, Hono's `c.req.text()`);
 * bytes that were not UTF-8 cannot be recovered from text, so keep the bytes where you can.
 *
 * @example
 * const body = decodedTextBody(ctx.request.rawBody, ctx.get('content-length'))
 */
export function decodedTextBody(text: string, contentLength: string | null | undefined): RawBody {
  if (!contentLength || text.charCodeAt(0) === 0xfeff) return text
  const bytes = encoder.encode(text)
  if (Number(contentLength) !== bytes.byteLength + BOM.length) return text
  const withBom = new Uint8Array(bytes.byteLength + BOM.length)
  withBom.set(BOM)
  withBom.set(bytes, BOM.length)
  return withBom
}

/** A web-standard `Response` for a receiver's answer. */
export function toResponse(result: WebhookResult): Response {
  return new Response(result.body, { status: result.status, headers: result.headers })
}

/**
 * Answers a web-standard `Request` (Workers, Deno, Bun, Hono, Next.js route handlers): refuses a POST without the
 * signature header at once (401, body unread, `connection: close`), uses the bytes an
 * earlier layer kept, or reads the body up to `webhooks.maxBodyBytes` (413 without buffering the rest) under the
 * receiver's deadline (408 and the read cancelled when it is still arriving then), refuses a body already
 * consumed (500 with `fix`), and returns `webhooks.receive`'s answer as a `Response`. Never rejects: anything
 * unexpected is answered 500. The twin of `receiveNodeRequest` from `@payhooks/core/node`;
 * `webhooks.handle(request)` is this without options.
 *
 * @example
 * import { receiveWebRequest } from '@payhooks/core'
 * export default {
 *   fetch: (request: Request) => receiveWebRequest(webhooks, request, { fix: 'read no body before this' }),
 * }
 */
export function receiveWebRequest(
  webhooks: WebReceiver,
  request: Request,
  options: WebRequestOptions = NO_OPTIONS,
): Promise<Response> {
  try {
    const method = request.method
    const getHeader: HeaderLookup = (name) => request.headers.get(name)
    let body: RawBody | Promise<RawBody> | null | undefined = options.body
    let stopReading: (() => void) | undefined
    const remoteAddress = options.remoteAddress
    if (isUnsigned(method, getHeader)) {
      return Promise.resolve(toResponse(webhooks.reject(missingSignature(), remoteAddress)))
    }
    if (method !== 'POST') body = ''
    else if (body === null) {
      const error = new RawBodyUnavailableError(`the request body was already parsed. ${options.fix ?? DEFAULT_FIX}`)
      return Promise.resolve(toResponse(webhooks.reject(error)))
    } else if (body === undefined) {
      if (request.bodyUsed) {
        const error = new RawBodyUnavailableError(`the request body was already read. ${options.fix ?? DEFAULT_FIX}`)
        return Promise.resolve(toResponse(webhooks.reject(error)))
      }
      const limit = webhooks.maxBodyBytes
      const length = request.headers.get('content-length')
      if (length !== null && Number(length) > limit) {
        return Promise.resolve(toResponse(webhooks.reject(new PayloadTooLargeError(limit))))
      }
      const stream = request.body
      if (!stream) body = EMPTY
      else {
        const reader = stream.getReader()
        body = readAll(reader, limit)
        stopReading = () => {
          reader.cancel().catch(ignore)
        }
      }
    }
    return webhooks.receive({ method, body, getHeader, stopReading, remoteAddress }).then(toResponse)
  } catch (error) {
    return Promise.resolve(toResponse(webhooks.reject(new InternalError(error))))
  }
}
