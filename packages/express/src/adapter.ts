import type { IncomingMessage, ServerResponse } from 'node:http'
import { decodedTextBody, type RawBody } from '@payhooks/core'
import {
  answerNodeRequest,
  type NodeReceiver,
  type NodeRequestOptions,
  receiveNodeRequest,
  writeNodeAnswer,
} from '@payhooks/core/node'
import parseurl from 'parseurl'

/** The part of a `createWebhooks()` receiver the adapter uses. */
export type ExpressReceiver = NodeReceiver

/** What body parsers may have left on the request (kept apart: some packages type `rawBody` globally). */
interface ParsedFields {
  body?: unknown
  rawBody?: unknown
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

/** Options of {@link expressWebhooks} mounted as app-wide middleware (`app.use`): the path it answers. */
export interface ExpressMiddlewareOptions extends ExpressWebhooksOptions {
  /**
   * The path it answers (every method: other than POST gets 405), matched as Express matches
   * `app.all(path)`: against the request's path after the mount path, parsed as Express parses it (no query or
   * fragment; an absolute-form target's path), in any case and with or without one trailing slash unless the
   * app enables `case sensitive routing` or `strict routing`. Any other path goes on to the next middleware.
   * Must start with `/` (else `expressWebhooks` throws a `TypeError`).
   * @example
   * app.use(expressWebhooks(webhooks, { path: '/webhooks' }))
   */
  path: string
}

/** Express's `next`: called for a request this middleware does not answer. */
export type ExpressNext = (error?: unknown) => void

export const FIX =
  'Mount the webhook route before express.json() / express.urlencoded() / express.text(), ' +
  'or keep the raw bytes with express.json({ verify: keepRawBody }) from @payhooks/express.'

/** Core's request options with the adapter's fix and its default kept bytes. */
export const REQUEST_OPTIONS: NodeRequestOptions = { fix: FIX }

export function keptBody(req: IncomingMessage): RawBody | undefined {
  const { rawBody, body } = req as ParsedFields
  if (rawBody instanceof Uint8Array) return rawBody
  // Text some layer decoded: a byte order mark its decoder dropped is put back when content-length counts it.
  if (typeof rawBody === 'string') return decodedTextBody(rawBody, req.headers['content-length'])
  if (body instanceof Uint8Array) return body
  return undefined
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
 * Mount it with `app.post` (other methods get Express's 404) or `app.all` (other methods get 405). Or, given a
 * `path`, as app-wide middleware with `app.use`: it answers that path (every method; other than POST 405) and
 * hands any other request to `next`.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! })
 * webhooks.on('transaction_settled', (event) => console.log(event.data.settlement_amount))
 * app.post('/webhooks', expressWebhooks(webhooks))
 * // or: app.use(expressWebhooks(webhooks, { path: '/webhooks' }))
 * app.use(express.json()) // after the webhook route, or with { verify: keepRawBody }
 */
export function expressWebhooks(
  webhooks: ExpressReceiver,
  options: ExpressMiddlewareOptions,
): (req: IncomingMessage, res: ServerResponse, next: ExpressNext) => void
export function expressWebhooks(
  webhooks: ExpressReceiver,
  options?: ExpressWebhooksOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void>
export function expressWebhooks(
  webhooks: ExpressReceiver,
  options: ExpressWebhooksOptions & { path?: string } = {},
): (req: IncomingMessage, res: ServerResponse, next: ExpressNext) => Promise<void> | void {
  const pickBody = options.rawBody
  // Inside core's try: a throwing rawBody option is answered 500, never a rejection Express 4 leaves unhandled.
  const requestOptions: NodeRequestOptions = {
    rawBody: pickBody ? (req) => pickBody(req) ?? keptBody(req) : keptBody,
    fix: FIX,
  }
  const path = options.path
  if (path === undefined) {
    return async function payhooksExpress(req, res) {
      writeNodeAnswer(res, await receiveNodeRequest(webhooks, req, requestOptions))
    }
  }
  if (typeof path !== 'string' || !path.startsWith('/')) {
    throw new TypeError(`expressWebhooks: path must be a string starting with '/', got ${JSON.stringify(path)}`)
  }
  const matches = pathMatcher(path)
  return function payhooksExpressMiddleware(req, res, next) {
    if (!matches(req)) {
      next()
      return
    }
    answerNodeRequest(webhooks, req, requestOptions, (result) => writeNodeAnswer(res, result))
  }
}

/** What the middleware reads of the Express app serving a request: its router's or its own routing settings. */
interface RoutingApp {
  _router?: RoutingSettings
  router?: RoutingSettings
  enabled?: (setting: string) => boolean
}
interface RoutingSettings {
  caseSensitive?: boolean
  strict?: boolean
}

function routingSettings(req: IncomingMessage): RoutingSettings {
  const app = (req as { app?: RoutingApp }).app
  if (!app) return {}
  // Express 4 keeps its router on `_router` (its `app.router` getter throws); Express 5 on `router`. Either was
  // made with the settings the app had then, which are the ones its routes match with.
  const router = app._router ?? app.router
  if (router) return router
  return { caseSensitive: app.enabled?.('case sensitive routing'), strict: app.enabled?.('strict routing') }
}

/**
 * Whether a request is for `path`, as Express's router would decide for `app.all(path)`: the pathname `parseurl`
 * gives (Express's own parser), compared as path-to-regexp compares a literal path.
 */
export function pathMatcher(path: string): (req: IncomingMessage) => boolean {
  const bare = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
  const escaped = bare.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
  const loose = bare === '/' ? '^\\/?$' : `^${escaped}(?:\\/)?$`
  const exact = `^${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`
  const patterns = [new RegExp(loose, 'i'), new RegExp(loose), new RegExp(exact, 'i'), new RegExp(exact)]
  return (req) => {
    const pathname = parseurl(req)?.pathname
    if (pathname == null) return false
    const { caseSensitive, strict } = routingSettings(req)
    return (patterns[(strict ? 2 : 0) + (caseSensitive ? 1 : 0)] as RegExp).test(pathname)
  }
}

/**
 * A `verify` function for Express body parsers that keeps the exact bytes on `req.rawBody`, so
 * `expressWebhooks` still works when `express.json()` runs before the webhook route. Mount
 * `expressWebhookErrors` after the route, so a body the parser refuses there gets the receiver's answer.
 *
 * @example
 * app.use(express.json({ verify: keepRawBody }))
 * app.post('/webhooks', expressWebhooks(webhooks))
 * app.use(expressWebhookErrors(webhooks, { path: '/webhooks' }))
 */
export function keepRawBody(req: IncomingMessage, _res: ServerResponse, buf: Buffer): void {
  ;(req as ParsedFields).rawBody = buf
}
