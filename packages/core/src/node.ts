import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import { InternalError, PayloadTooLargeError, RawBodyUnavailableError } from './errors/index.js'
import { healthAnswer } from './health/answer.js'
import type { HealthOptions, HealthReceiver } from './health/index.js'
import { NodeBody } from './http/node-body.js'
import { isUnsigned, missingSignature } from './refusals/unsigned.js'
import type { RawDelivery, WebhookResult, Webhooks } from './types.js'
import type { RawBody } from './verify/signature.js'

/** The part of a `createWebhooks()` receiver a Node adapter uses. */
export type NodeReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'> &
  Partial<Pick<Webhooks<unknown>, 'respond'>>

/** Options of {@link receiveNodeRequest}. */
export interface NodeRequestOptions {
  /** The exact bytes an earlier layer kept (`req.rawBody`, `express.raw()`, a body parser's raw text), if any. */
  body?: RawBody
  /**
   * Finds the kept bytes on the request, when `body` is not given (`undefined`: read the stream). A throw is
   * answered 500 `internal_error` and reported to `onError`.
   */
  rawBody?: ((req: IncomingMessage) => RawBody | undefined) | undefined
  /** How to fix the app when a parser consumed the body without keeping it: one sentence, framework-specific. */
  fix: string
  /**
   * The client's address, as {@link RawDelivery.remoteAddress}: read only when a failure is logged or diagnosed.
   * @default `req.ip` when a framework set one (Express, which honours its `trust proxy`), else the socket's peer
   */
  remoteAddress?: ((req: IncomingMessage) => string | undefined) | undefined
}

/** `req.ip` when a framework set one (Express), else the socket's peer address. */
function clientAddress(req: IncomingMessage): string | undefined {
  const ip = (req as { ip?: unknown }).ip
  return typeof ip === 'string' ? ip : req.socket?.remoteAddress
}

/** A delivery of a Node request: its client's address is looked up only when read (a failure's log or the doctor). */
class NodeDelivery implements RawDelivery {
  constructor(
    readonly method: string,
    readonly body: RawBody | PromiseLike<RawBody>,
    readonly getHeader: (name: string) => string | undefined,
    private readonly req: IncomingMessage,
    private readonly address: ((req: IncomingMessage) => string | undefined) | undefined,
    readonly stopReading?: () => void,
  ) {}

  get remoteAddress(): string | undefined {
    return (this.address ?? clientAddress)(this.req)
  }
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
 * reads the stream up to `webhooks.maxBodyBytes` under the receiver's deadline, which starts now. A POST without
 * the signature header is answered 401 at once, its body unread; a body over
 * the limit is answered 413 and one still arriving at the deadline 408, all with `connection: close` and the
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
  const delivery = nodeDelivery(webhooks, req, options)
  return isAnswer(delivery) ? Promise.resolve(delivery) : webhooks.receive(delivery)
}

/**
 * {@link receiveNodeRequest} with the answer handed to `send` instead of a promise (through `webhooks.respond`,
 * so a delivery makes no promise of its own): `send` is called exactly once, at once or later (at the latest at
 * the receiver's deadline). Never throws; a `send` that throws is reported to `onError`.
 *
 * @example
 * import { answerNodeRequest, writeNodeAnswer } from '@payhooks/core/node'
 * http.createServer((req, res) => {
 *   answerNodeRequest(webhooks, req, { fix: 'read no body before this' }, (answer) => writeNodeAnswer(res, answer))
 * })
 */
export function answerNodeRequest(
  webhooks: NodeReceiver,
  req: IncomingMessage,
  options: NodeRequestOptions,
  send: (result: WebhookResult) => void,
): void {
  const delivery = nodeDelivery(webhooks, req, options)
  if (isAnswer(delivery)) sendOrReport(webhooks, send, delivery)
  else if (webhooks.respond) webhooks.respond(delivery, send)
  else {
    // A receiver that breaks its "never rejects" is answered 500, not left as an unhandled rejection.
    webhooks.receive(delivery).then(
      (result) => sendOrReport(webhooks, send, result),
      (error: unknown) => sendOrReport(webhooks, send, webhooks.reject(new InternalError(error))),
    )
  }
}

/**
 * The answer's headers for a request over this HTTP version: as they are, but without `connection` over HTTP/2,
 * which has none (Node drops one set on an HTTP/2 answer with an `UnsupportedWarning`; the stream ends with the
 * answer). For adapters writing the answer through a framework's own response.
 * @example
 * ctx.set(nodeAnswerHeaders(result, ctx.req.httpVersionMajor))
 */
export function nodeAnswerHeaders(result: WebhookResult, httpVersionMajor: number): Record<string, string> {
  const headers = result.headers
  if (httpVersionMajor < 2 || headers.connection === undefined) return headers
  const { connection: _dropped, ...rest } = headers
  return rest
}

/**
 * Writes `result` out on `res`, with its headers; Node adds the `content-length` (so a keep-alive answer is not
 * chunked). Writes nothing if an answer already went out.
 *
 * @example
 * answerNodeRequest(webhooks, req, { fix: 'read no body before this' }, (answer) => writeNodeAnswer(res, answer))
 */
export function writeNodeAnswer(res: ServerResponse, result: WebhookResult): void {
  if (res.headersSent) return
  res.statusCode = result.status
  const headers = result.headers
  // setHeader and a body given to end() are cheaper than writeHead with a copy of the headers (measured ~2 µs).
  for (const name in headers) res.setHeader(name, headers[name] as string)
  res.end(result.body)
}

/** Options of {@link nodeWebhooks}. */
export interface NodeWebhooksOptions {
  /**
   * Where an earlier layer left the exact bytes of the body, if one read it. Return `undefined` to read the stream.
   * If it throws, the request is answered 500 `internal_error` and the error goes to `onError`.
   * @default none: the request stream is read
   */
  rawBody?: (req: IncomingMessage) => RawBody | undefined
}

/**
 * A `node:http` request listener for the payment service's webhooks: reads the exact body bytes, hands them to
 * the receiver, and writes its answer out, with no promise per request. Every method and path it is given is
 * answered (other methods 405): route to it yourself if the server serves anything else.
 *
 * @example
 * import { createServer } from 'node:http'
 * import { nodeWebhooks } from '@payhooks/core/node'
 * createServer(nodeWebhooks(webhooks)).listen(3000)
 */
export function nodeWebhooks(
  webhooks: NodeReceiver,
  options: NodeWebhooksOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  // A throwing rawBody is answered 500 internal_error by nodeDelivery: out of a request listener it would end the
  // process, as node:http has no layer above to catch it.
  const requestOptions: NodeRequestOptions = { rawBody: options.rawBody, fix: LISTENER_FIX }
  return function payhooksNode(req, res) {
    answerNodeRequest(webhooks, req, requestOptions, (result) => writeNodeAnswer(res, result))
  }
}

const LISTENER_FIX = 'Read no body before the webhook listener, or hand it the bytes with the rawBody option.'

function isAnswer(value: RawDelivery | WebhookResult): value is WebhookResult {
  return typeof (value as WebhookResult).status === 'number'
}

function sendOrReport(webhooks: NodeReceiver, send: (result: WebhookResult) => void, result: WebhookResult): void {
  try {
    send(result)
  } catch (error) {
    webhooks.reject(new InternalError(error))
  }
}

/** The delivery for `req`, or the answer when it is refused before any work. */
function nodeDelivery(
  webhooks: NodeReceiver,
  req: IncomingMessage,
  options: NodeRequestOptions,
): RawDelivery | WebhookResult {
  try {
    const method = req.method ?? 'POST'
    const headers = req.headers
    const getHeader = (name: string) => {
      const value = headers[name]
      return Array.isArray(value) ? value[0] : value
    }
    const address = options.remoteAddress
    // Refused unread, whatever an earlier layer kept: no work for a sender without the secret.
    if (isUnsigned(method, getHeader)) return webhooks.reject(missingSignature(), (address ?? clientAddress)(req))
    const kept = options.body ?? options.rawBody?.(req)
    if (kept !== undefined) return new NodeDelivery(method, kept, getHeader, req, address)
    if (method !== 'POST') return new NodeDelivery(method, '', getHeader, req, address)
    if (streamConsumed(req)) {
      return webhooks.reject(
        new RawBodyUnavailableError(`the request body was already read and parsed. ${options.fix}`),
      )
    }
    const limit = webhooks.maxBodyBytes
    const length = headers['content-length']
    if (length !== undefined && Number(length) > limit) return webhooks.reject(new PayloadTooLargeError(limit))
    // The body by callback: no promise per request, and processing starts in the stream's own 'end'.
    const body = new NodeBody(req, limit)
    return new NodeDelivery(method, body as unknown as PromiseLike<Uint8Array>, getHeader, req, address, body.stop)
  } catch (error) {
    return webhooks.reject(new InternalError(error))
  }
}

/**
 * A readiness route for node:http (and Express, whose request handlers take the same arguments): 200
 * `{"ready":true}` when `webhooks.health()` is ready, 503 `{"ready":false}` otherwise (nothing else). Point the load
 * balancer's or Kubernetes' readiness probe at it; `webhooks.drain()` turns it 503 for a shutdown.
 *
 * @example
 * const ready = nodeHealth(webhooks)
 * http.createServer((req, res) => (req.url === '/ready' ? ready(req, res) : handle(req, res))).listen(3000)
 */
export function nodeHealth(
  webhooks: HealthReceiver,
  options?: HealthOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (_req, res) => {
    healthAnswer(webhooks, options).then(({ status, headers, body }) => {
      if (!res.headersSent) res.writeHead(status, headers)
      res.end(body)
    })
  }
}
