import type { IncomingMessage } from 'node:http'
import getRawBody from 'raw-body'
import { InternalError, PayloadTooLargeError, RawBodyUnavailableError } from './errors.js'
import type { RawBody } from './signature.js'
import type { WebhookResult, Webhooks } from './types.js'

/** The part of a `createWebhooks()` receiver a Node adapter uses. */
export type NodeReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'>

/** Options of {@link receiveNodeRequest}. */
export interface NodeRequestOptions {
  /** The exact bytes an earlier layer kept (`req.rawBody`, `express.raw()`, a body parser's raw text), if any. */
  body?: RawBody
  /** How to fix the app when a parser consumed the body without keeping it: one sentence, framework-specific. */
  fix: string
}

/** True once anything has read the request stream: body-parser 1 sets `_body`, others read it to the end. */
function streamConsumed(req: IncomingMessage): boolean {
  return (
    (req as { _body?: unknown })._body === true ||
    req.readableEnded ||
    req.readableDidRead ||
    (req.complete && !req.readable)
  )
}

/**
 * Answers a Node `IncomingMessage` (Express, Koa, plain node:http): uses the bytes an earlier layer
 * kept, or reads the stream with `raw-body` up to `webhooks.maxBodyBytes` (413 without buffering the
 * rest), refuses a body a parser already consumed (500 with `fix`), then calls `webhooks.receive`.
 * Adapters only find the kept bytes and write the answer out.
 *
 * @example
 * import { receiveNodeRequest } from '@payhooks/core/node'
 * http.createServer(async (req, res) => {
 *   const { status, headers, body } = await receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
 *   res.writeHead(status, headers).end(body)
 * })
 */
export async function receiveNodeRequest(
  webhooks: NodeReceiver,
  req: IncomingMessage,
  options: NodeRequestOptions,
): Promise<WebhookResult> {
  try {
    const method = req.method ?? 'POST'
    let body = options.body
    if (body === undefined) {
      if (method !== 'POST') body = ''
      else if (streamConsumed(req)) {
        return webhooks.reject(
          new RawBodyUnavailableError(`the request body was already read and parsed. ${options.fix}`),
        )
      } else {
        const limit = webhooks.maxBodyBytes
        try {
          body = await getRawBody(req, { length: req.headers['content-length'], limit })
        } catch (error) {
          req.resume() // drop what is still coming, unbuffered
          const tooLarge = (error as { type?: string }).type === 'entity.too.large'
          return webhooks.reject(tooLarge ? new PayloadTooLargeError(limit) : new InternalError(error))
        }
      }
    }
    const getHeader = (name: string) => {
      const value = req.headers[name]
      return Array.isArray(value) ? value[0] : value
    }
    return await webhooks.receive({ method, body, getHeader })
  } catch (error) {
    return webhooks.reject(new InternalError(error))
  }
}
