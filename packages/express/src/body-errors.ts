import type { IncomingMessage, ServerResponse } from 'node:http'
import {
  IncompleteBodyError,
  PayloadTooLargeError,
  SIGNATURE_HEADER,
  SignatureError,
  type WebhookError,
  type WebhookResult,
} from '@payhooks/core'
import { receiveNodeRequest, writeNodeAnswer } from '@payhooks/core/node'
import { type ExpressNext, type ExpressReceiver, keptBody, pathMatcher, REQUEST_OPTIONS } from './adapter.js'

/** Options of {@link expressWebhookErrors}. */
export interface ExpressWebhookErrorsOptions {
  /**
   * The webhook route's path, matched as `expressWebhooks(webhooks, { path })` matches it: a body parser's error on
   * it gets the receiver's answer, unsigned requests too. Without it, only requests carrying the service's
   * `service-hmac-sha256` header are answered; every other error goes on to `next`.
   * @example
   * app.use(expressWebhookErrors(webhooks, { path: '/webhooks' }))
   */
  path?: string
}

/** The `type` of body-parser's errors (Express 4's body-parser 1, Express 5's body-parser 2). */
const BODY_PARSER_ERRORS = new Set([
  'entity.parse.failed',
  'entity.verify.failed',
  'entity.too.large',
  'parameters.too.many',
  'request.aborted',
  'request.size.invalid',
  'encoding.unsupported',
  'charset.unsupported',
  'stream.encoding.set',
  'stream.not.readable',
])

interface BodyParserError {
  type?: unknown
  limit?: unknown
}

const isBodyParserError = (error: unknown): error is BodyParserError =>
  typeof error === 'object' &&
  error !== null &&
  typeof (error as BodyParserError).type === 'string' &&
  BODY_PARSER_ERRORS.has((error as BodyParserError).type as string)

/**
 * An Express error-handling middleware for the webhook route behind an app-wide body parser (`express.json({ verify:
 * keepRawBody })`): a body the parser refused (malformed JSON, over its `limit`, a charset it does not know, a client
 * that hung up) gets the receiver's own answer, one line of JSON with a fixed reason, instead of Express's HTML
 * error page and stack trace. With the bytes `keepRawBody` kept, or a stream the parser left unread, the request
 * goes to the receiver as a delivery would (so a wrongly signed body is 401, a signed malformed one 400
 * `invalid_json`); a body over the parser's `limit` is 413 `payload_too_large` (401 `missing_signature` when
 * unsigned); a body cut short 400 `incomplete_body`. The error goes to `onError` (or the log), never into the answer.
 * Mount it after the webhook route; any other error, or a request for another path, goes on to `next`.
 *
 * @example
 * app.use(express.json({ verify: keepRawBody }))
 * app.all('/webhooks', expressWebhooks(webhooks))
 * app.use(expressWebhookErrors(webhooks, { path: '/webhooks' }))
 */
export function expressWebhookErrors(
  webhooks: ExpressReceiver,
  options: ExpressWebhookErrorsOptions = {},
): (error: unknown, req: IncomingMessage, res: ServerResponse, next: ExpressNext) => void {
  const path = options.path
  if (path !== undefined && (typeof path !== 'string' || !path.startsWith('/'))) {
    throw new TypeError(`expressWebhookErrors: path must be a string starting with '/', got ${JSON.stringify(path)}`)
  }
  const matches = path === undefined ? (req: IncomingMessage) => !!req.headers[SIGNATURE_HEADER] : pathMatcher(path)
  return function payhooksExpressErrors(error, req, res, next) {
    if (!isBodyParserError(error) || res.headersSent || !matches(req)) {
      next(error)
      return
    }
    const write = (result: WebhookResult) => writeNodeAnswer(res, result)
    const kept = keptBody(req)
    const type = error.type
    // The bytes are known (kept, or the stream still unread: a charset refused before reading), so the receiver
    // answers as it would any delivery.
    if (kept !== undefined || type === 'charset.unsupported') {
      receiveNodeRequest(webhooks, req, { ...REQUEST_OPTIONS, body: kept }).then(write, next)
      return
    }
    let refusal: WebhookError
    if (!req.headers[SIGNATURE_HEADER]) {
      refusal = new SignatureError('missing_signature', `missing ${SIGNATURE_HEADER} header`)
    } else if (type === 'entity.too.large' || type === 'parameters.too.many') {
      // The parser's limit, which refused it: the one to raise when the service's bodies are larger.
      refusal = new PayloadTooLargeError(typeof error.limit === 'number' ? error.limit : webhooks.maxBodyBytes)
    } else if (type === 'request.aborted' || type === 'request.size.invalid') {
      refusal = new IncompleteBodyError(new Error(type))
    } else {
      // The parser read the body and kept nothing (a verify function other than keepRawBody threw): core answers
      // 500 raw_body_unavailable, saying how to keep the bytes.
      receiveNodeRequest(webhooks, req, REQUEST_OPTIONS).then(write, next)
      return
    }
    write(webhooks.reject(refusal, (req as { ip?: string }).ip ?? req.socket?.remoteAddress))
  }
}
