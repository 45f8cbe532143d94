import type { IncomingMessage } from 'node:http'
import type { Readable } from 'node:stream'
import { InternalError, PayloadTooLargeError, RawBodyUnavailableError } from './errors.js'
import { NodeBody } from './node-body.js'
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

/** A body being read by {@link readNodeBody}. */
export interface NodeBodyRead {
  /**
   * The bytes, once the stream ended. Rejects with `PayloadTooLargeError` as soon as more than `limit` bytes
   * arrived, and with `IncompleteBodyError` when the stream fails or closes first; resolves with what arrived
   * so far once {@link NodeBodyRead.stop} was called.
   */
  body: Promise<Uint8Array>
  /** Stops reading: the listeners go and the stream is paused, so the socket reads no more. */
  stop(): void
}

/**
 * Reads a Node request stream (or a `Readable` standing for it) to its end, holding at most `limit` bytes: past
 * the limit it stops reading and rejects with `PayloadTooLargeError`, without taking in the rest. Hand `body` and
 * `stop` to `webhooks.receive` as `body` and `stopReading`, so the receiver's deadline covers the read.
 *
 * @example
 * const read = readNodeBody(req, webhooks.maxBodyBytes)
 * const answer = await webhooks.receive({ body: read.body, stopReading: read.stop, getHeader })
 */
export function readNodeBody(stream: Readable, limit: number): NodeBodyRead {
  const read = new NodeBody(stream, limit)
  return { body: new Promise<Uint8Array>((resolve, reject) => read.then(resolve, reject)), stop: read.stop }
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
 * Answers a Node `IncomingMessage` (Express, Koa, plain node:http): uses the bytes an earlier layer kept, or
 * reads the stream up to `webhooks.maxBodyBytes` under the receiver's deadline, which starts now. A body over
 * the limit is answered 413 and one still arriving at the deadline 408, both with `connection: close` and the
 * read stopped, so Node destroys the socket once the answer is out instead of reading on. A body a parser
 * already consumed is answered 500 with `fix`. Adapters only find the kept bytes and write the answer out, with
 * all its headers. Never rejects.
 *
 * @example
 * import { receiveNodeRequest } from '@payhooks/core/node'
 * http.createServer(async (req, res) => {
 *   const { status, headers, body } = await receiveNodeRequest(webhooks, req, { fix: 'read no body before this' })
 *   res.writeHead(status, headers).end(body)
 * })
 */
export function receiveNodeRequest(
  webhooks: NodeReceiver,
  req: IncomingMessage,
  options: NodeRequestOptions,
): Promise<WebhookResult> {
  try {
    const method = req.method ?? 'POST'
    const headers = req.headers
    const getHeader = (name: string) => {
      const value = headers[name]
      return Array.isArray(value) ? value[0] : value
    }
    const kept = options.body
    if (kept !== undefined) return webhooks.receive({ method, body: kept, getHeader })
    if (method !== 'POST') return webhooks.receive({ method, body: '', getHeader })
    if (streamConsumed(req)) {
      const error = new RawBodyUnavailableError(`the request body was already read and parsed. ${options.fix}`)
      return Promise.resolve(webhooks.reject(error))
    }
    const limit = webhooks.maxBodyBytes
    const length = headers['content-length']
    if (length !== undefined && Number(length) > limit) {
      return Promise.resolve(webhooks.reject(new PayloadTooLargeError(limit)))
    }
    // The body by callback: no promise per request, and processing starts in the stream's own 'end'.
    const body = new NodeBody(req, limit)
    return webhooks.receive({
      method,
      body: body as unknown as PromiseLike<Uint8Array>,
      getHeader,
      stopReading: body.stop,
    })
  } catch (error) {
    return Promise.resolve(webhooks.reject(new InternalError(error)))
  }
}
