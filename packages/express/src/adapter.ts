import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  InternalError,
  PayloadTooLargeError,
  type RawBody,
  RawBodyUnavailableError,
  type WebhookResult,
  type Webhooks,
} from '@payhooks/core'
import getRawBody from 'raw-body'

/** The part of a `createWebhooks()` receiver the adapter uses. */
export type ExpressReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'>

/** What body parsers may have left on the request (kept apart: some packages type `rawBody` globally). */
interface ParsedFields {
  body?: unknown
  rawBody?: unknown
  _body?: boolean
}

/** Options of {@link expressWebhooks}. */
export interface ExpressWebhooksOptions {
  /**
   * Where an earlier layer left the exact bytes of the body, if somewhere other than the defaults.
   * Return `undefined` to fall back to them.
   * @default a `req.rawBody` Buffer or string (as set by {@link keepRawBody}), else a Buffer `req.body` (as set by `express.raw()`), else the unread request stream
   * @example
   * expressWebhooks(webhooks, { rawBody: (req) => (req as { signedBytes?: Buffer }).signedBytes })
   */
  rawBody?: (req: IncomingMessage) => RawBody | undefined
}

const FIX =
  'Mount the webhook route before express.json() / express.urlencoded() / express.text(), ' +
  'or keep the raw bytes with express.json({ verify: keepRawBody }) from @payhooks/express.'

function keptBody(req: IncomingMessage): RawBody | undefined {
  const { rawBody, body } = req as ParsedFields
  if (rawBody instanceof Uint8Array || typeof rawBody === 'string') return rawBody
  if (body instanceof Uint8Array) return body
  return undefined
}

/** True once anything has read the request stream: body-parser 1 sets `_body`, 2 reads to the end. */
function streamConsumed(req: IncomingMessage): boolean {
  return (
    (req as ParsedFields)._body === true || req.readableEnded || req.readableDidRead || (req.complete && !req.readable)
  )
}

function send(res: ServerResponse, result: WebhookResult): void {
  if (res.headersSent) return
  res.writeHead(result.status, { ...result.headers, 'content-length': Buffer.byteLength(result.body) })
  res.end(result.body)
}

/**
 * Express request handler for the payment service's webhooks: reads the exact body bytes, hands
 * them to `webhooks.receive`, and writes out its answer. Verification, dedupe, status codes and the
 * deadline are all `@payhooks/core`'s.
 *
 * It must see the bytes the service signed. If `express.json()`, `express.urlencoded()` or
 * `express.text()` runs first and parses the body, the bytes are gone: every delivery is then
 * answered 500 `raw_body_unavailable` (and reported to `onError`) and no handler runs. Fix it by
 * mounting the webhook route before those parsers, or by keeping the bytes with
 * `express.json({ verify: keepRawBody })`. A Buffer body from `express.raw()` is used as is.
 *
 * Mount it with `app.post` (other methods get Express's 404) or `app.all` (other methods get 405).
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! })
 * webhooks.on('transaction_settled', (event) => console.log(event.data.settlement_amount))
 * app.post('/webhooks', expressWebhooks(webhooks))
 * app.use(express.json()) // after the webhook route, or with { verify: keepRawBody }
 */
export function expressWebhooks(
  webhooks: ExpressReceiver,
  options: ExpressWebhooksOptions = {},
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  const limit = webhooks.maxBodyBytes
  const pickBody = options.rawBody

  return async function payhooksExpress(req, res) {
    try {
      const getHeader = (name: string) => {
        const value = req.headers[name]
        return Array.isArray(value) ? value[0] : value
      }
      const method = req.method ?? 'POST'
      let body = pickBody?.(req) ?? keptBody(req)
      if (body === undefined) {
        if (method !== 'POST') body = ''
        else if (streamConsumed(req)) {
          send(
            res,
            webhooks.reject(new RawBodyUnavailableError(`the request body was already read and parsed. ${FIX}`)),
          )
          return
        } else {
          try {
            body = await getRawBody(req, { length: req.headers['content-length'], limit })
          } catch (error) {
            req.resume() // drop what is still coming, unbuffered
            const tooLarge = (error as { type?: string }).type === 'entity.too.large'
            send(res, webhooks.reject(tooLarge ? new PayloadTooLargeError(limit) : new InternalError(error)))
            return
          }
        }
      }
      send(res, await webhooks.receive({ method, body, getHeader }))
    } catch (error) {
      send(res, webhooks.reject(new InternalError(error)))
    }
  }
}

/**
 * A `verify` function for Express body parsers that keeps the exact bytes on `req.rawBody`, so
 * `expressWebhooks` still works when `express.json()` runs before the webhook route.
 *
 * @example
 * app.use(express.json({ verify: keepRawBody }))
 * app.post('/webhooks', expressWebhooks(webhooks))
 */
export function keepRawBody(req: IncomingMessage, _res: ServerResponse, buf: Buffer): void {
  ;(req as ParsedFields).rawBody = buf
}
