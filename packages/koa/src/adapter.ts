import type { IncomingMessage } from 'node:http'
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
export type KoaReceiver = Pick<Webhooks<unknown>, 'receive' | 'reject' | 'maxBodyBytes'>

/** The part of Koa's context the adapter uses (Koa 2 and 3). */
export interface KoaWebhookContext {
  req: IncomingMessage
  method: string
  /** `rawBody` is where `@koa/bodyparser` and `koa-bodyparser` keep the text they parsed. */
  request: { rawBody?: unknown }
  status: number
  body: unknown
  set(field: string, value: string): void
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

function send(ctx: KoaWebhookContext, result: WebhookResult): void {
  ctx.status = result.status
  for (const [name, value] of Object.entries(result.headers)) ctx.set(name, value)
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
  const limit = webhooks.maxBodyBytes
  const pickBody = options.rawBody

  return async function payhooksKoa(ctx) {
    const { req } = ctx
    try {
      const getHeader = (name: string) => {
        const value = req.headers[name]
        return Array.isArray(value) ? value[0] : value
      }
      const kept = ctx.request.rawBody
      let body = pickBody?.(ctx) ?? (kept instanceof Uint8Array || typeof kept === 'string' ? kept : undefined)
      if (body === undefined) {
        if (ctx.method !== 'POST') body = ''
        else if (req.readableEnded || req.readableDidRead || (req.complete && !req.readable)) {
          send(
            ctx,
            webhooks.reject(new RawBodyUnavailableError(`the request body was already read and parsed. ${FIX}`)),
          )
          return
        } else {
          try {
            body = await getRawBody(req, { length: req.headers['content-length'], limit })
          } catch (error) {
            req.resume() // drop what is still coming, unbuffered
            const tooLarge = (error as { type?: string }).type === 'entity.too.large'
            send(ctx, webhooks.reject(tooLarge ? new PayloadTooLargeError(limit) : new InternalError(error)))
            return
          }
        }
      }
      send(ctx, await webhooks.receive({ method: ctx.method, body, getHeader }))
    } catch (error) {
      send(ctx, webhooks.reject(new InternalError(error)))
    }
  }
}
