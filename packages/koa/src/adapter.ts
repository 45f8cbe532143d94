import type { IncomingMessage } from 'node:http'
import { decodedTextBody, type RawBody, type WebhookResult } from '@payhooks/core'
import { type NodeReceiver, nodeAnswerHeaders, receiveNodeRequest } from '@payhooks/core/node'

/** The part of a `createWebhooks()` receiver the adapter uses. */
export type KoaReceiver = NodeReceiver

/** The part of Koa's context the adapter uses (Koa 2 and 3). */
export interface KoaWebhookContext {
  req: IncomingMessage
  method: string
  /** `rawBody` is where `@koa/bodyparser` and `koa-bodyparser` keep the text they parsed. */
  request: { rawBody?: unknown }
  status: number
  body: unknown
  set(field: string, value: string): void
  /** The client's address (Koa's, which honours `app.proxy`): keeps one sender's logged failures apart from another's. */
  ip?: string
}

/** Options of {@link koaWebhooks}. */
export interface KoaWebhooksOptions<C extends KoaWebhookContext = KoaWebhookContext> {
  /**
   * Where an earlier middleware left the exact body, if somewhere other than `ctx.request.rawBody`.
   * Return `undefined` to fall back to the default.
   * @default a string or Buffer `ctx.request.rawBody` (as `@koa/bodyparser` sets it), else the unread request stream
   * @example
   * koaWebhooks(webhooks, { rawBody: (ctx: Koa.Context) => ctx.state.signedBytes })
   */
  rawBody?: (ctx: C) => RawBody | undefined
}

const FIX =
  'Mount the webhook route before the body parser, or use a parser that keeps the raw text on ' +
  'ctx.request.rawBody, such as @koa/bodyparser or koa-bodyparser.'

/** The bytes a body parser kept; its decoded text when that is all it kept (a dropped BOM put back). */
function keptBody(ctx: KoaWebhookContext): RawBody | undefined {
  const kept = ctx.request.rawBody
  if (kept instanceof Uint8Array) return kept
  if (typeof kept === 'string') return decodedTextBody(kept, ctx.req.headers['content-length'])
  return undefined
}

function send(ctx: KoaWebhookContext, result: WebhookResult): void {
  ctx.status = result.status
  const headers = nodeAnswerHeaders(result, ctx.req.httpVersionMajor)
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value)
  ctx.body = result.body
}

/**
 * Koa middleware for the payment service's webhooks: reads the exact body, hands it to
 * `webhooks.receive`, and answers with its result. It ends the chain (never calls `next`).
 * Verification, dedupe, status codes and the deadline are all `@payhooks/core`'s.
 *
 * A body parser mounted before it is fine when it keeps the raw text on `ctx.request.rawBody`, as
 * `@koa/bodyparser` and `koa-bodyparser` do. One that consumes the body without keeping it gets
 * every delivery answered 500 `raw_body_unavailable` (reported to `onError`), and no handler runs.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET! })
 * webhooks.on('transaction_settled', (event) => console.log(event.data.settlement_amount))
 * const router = new Router()
 * router.post('/webhooks', koaWebhooks(webhooks))
 * app.use(bodyParser()).use(router.routes())
 */
export function koaWebhooks<C extends KoaWebhookContext = KoaWebhookContext>(
  webhooks: KoaReceiver,
  options: KoaWebhooksOptions<C> = {},
): (ctx: C, next?: () => Promise<unknown>) => Promise<void> {
  const pickBody = options.rawBody
  return async function payhooksKoa(ctx) {
    const body = pickBody?.(ctx) ?? keptBody(ctx)
    send(
      ctx,
      await receiveNodeRequest(webhooks, ctx.req, {
        body,
        fix: FIX,
        remoteAddress: () => ctx.ip ?? ctx.req.socket?.remoteAddress,
      }),
    )
  }
}
