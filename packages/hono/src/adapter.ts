import {
  decodedTextBody,
  InternalError,
  type RawBody,
  receiveWebRequest,
  SIGNATURE_HEADER,
  toResponse,
  type WebReceiver,
} from '@payhooks/core'
import type { Context } from 'hono'

/** The part of a `createWebhooks()` receiver the adapter uses. */
export type HonoReceiver = WebReceiver

/** Options of {@link honoWebhooks}. */
export interface HonoWebhooksOptions {
  /**
   * Where an earlier middleware left the exact body, if somewhere other than Hono's body cache.
   * Return `undefined` to fall back to the default.
   * @default the body Hono cached for an earlier `c.req.arrayBuffer()`, `blob()`, `text()` or (recent Hono, which caches the text) `json()`, else the unread request body
   * @example
   * honoWebhooks(webhooks, { rawBody: (c) => c.get('signedBody') })
   */
  rawBody?: (c: Context) => RawBody | Promise<RawBody | undefined> | undefined
  /**
   * The client's address, to keep one sender's failures apart from another's in the log and the signature
   * doctor's time (`getConnInfo(c).remote.address` of your runtime's `hono/<runtime>` module, say).
   * @default the socket's peer on `@hono/node-server`, `server.requestIP()` on Bun, `remoteAddr` on Deno, else none
   */
  remoteAddress?: (c: Context) => string | undefined
}

const FIX =
  'Let the webhook route read the body itself (do not parse it in a middleware that runs first), ' +
  'or read it there with c.req.text() or c.req.arrayBuffer(), which Hono caches as is.'

type Cache = Record<string, Promise<unknown> | undefined>

/** Exact bytes or text Hono cached for an earlier read; `null` when only a parsed form is cached. */
async function cachedBody(c: Context): Promise<RawBody | null | undefined> {
  const cache = c.req.bodyCache as Cache
  if (cache.arrayBuffer) return new Uint8Array((await cache.arrayBuffer) as ArrayBuffer)
  if (cache.blob) return new Uint8Array(await ((await cache.blob) as Blob).arrayBuffer())
  // Hono's text() decodes (dropping a BOM): the bytes are put back when content-length shows it was there.
  if (cache.text) return decodedTextBody((await cache.text) as string, c.req.header('content-length'))
  // Older Hono kept only the parsed JSON (or form) here; turning it back into text would not give the signed bytes.
  return Object.keys(cache).length > 0 || c.req.raw.bodyUsed ? null : undefined
}

/**
 * Hono handler for the payment service's webhooks, for every runtime Hono runs on: hands the exact
 * body to `@payhooks/core` and returns its answer. Verification, dedupe, status codes and the
 * deadline are all core's.
 *
 * If a middleware before it already read the body with `c.req.text()`, `arrayBuffer()`, `blob()`
 * or (recent Hono, which caches the text) `json()`, that cached body is used. If only parsed JSON or
 * form data is left (older Hono's `json()`, a raw `c.req.raw` read), the signed bytes are gone:
 * the delivery is answered 500 `raw_body_unavailable` (reported to `onError`) and no handler runs.
 *
 * Mount it with `app.post` (other methods get Hono's 404) or `app.all` (other methods get 405).
 *
 * @example
 * const webhooks = createWebhooks({ secret: env.WEBHOOK_SECRET })
 * webhooks.on('transaction_settled', (event) => console.log(event.data.settlement_amount))
 * app.post('/webhooks', honoWebhooks(webhooks))
 */
export function honoWebhooks(
  webhooks: HonoReceiver,
  options: HonoWebhooksOptions = {},
): (c: Context, next?: () => Promise<void>) => Promise<Response> {
  const pickBody = options.rawBody

  return async function payhooksHono(c) {
    let body: RawBody | null | undefined
    try {
      // Unsigned: nothing reads the body (the rawBody option neither); receiveWebRequest answers 401 at once.
      if (c.req.raw.headers.get(SIGNATURE_HEADER)) {
        body = pickBody ? await pickBody(c) : undefined
        if (body === undefined) body = await cachedBody(c)
      }
    } catch (error) {
      return toResponse(webhooks.reject(new InternalError(error)))
    }
    let remoteAddress: string | undefined
    try {
      remoteAddress = (options.remoteAddress ?? runtimeAddress)(c)
    } catch {
      // Only the log's grouping and the doctor's share depend on it: the delivery goes on without.
    }
    const response = await receiveWebRequest(webhooks, c.req.raw, { body, fix: FIX, remoteAddress })
    // Over HTTP/2 through @hono/node-server (its Node request on c.env.incoming) a connection header is dropped by
    // Node with a warning: HTTP/2 has none, its stream ends with the answer.
    if (overHttp2(c)) response.headers.delete('connection')
    return response
  }
}

interface RuntimeEnv {
  /** @hono/node-server's Node request. */
  incoming?: { socket?: { remoteAddress?: string } }
  /** Bun's server. */
  requestIP?: (request: Request) => { address?: string } | null
  /** Deno's handler info. */
  remoteAddr?: { hostname?: string }
}

/** The peer's address where the runtime hands Hono one (Node, Bun, Deno); undefined elsewhere. */
function runtimeAddress(c: Context): string | undefined {
  const env = c.env as RuntimeEnv | undefined
  if (env === undefined || env === null) return undefined
  const address = env.incoming?.socket?.remoteAddress ?? env.remoteAddr?.hostname
  if (address !== undefined) return address
  return typeof env.requestIP === 'function' ? (env.requestIP(c.req.raw)?.address ?? undefined) : undefined
}

const overHttp2 = (c: Context): boolean =>
  ((c.env as { incoming?: { httpVersionMajor?: number } } | undefined)?.incoming?.httpVersionMajor ?? 1) >= 2
