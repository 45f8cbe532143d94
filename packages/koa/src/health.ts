import { type HealthOptions, type HealthReceiver, healthAnswer } from '@payhooks/core'

/** The part of Koa's context the readiness route uses. */
export interface KoaHealthContext {
  status: number
  body: unknown
  set(field: Record<string, string>): void
}

/**
 * A readiness route: 200 `{"ready":true}` when `webhooks.health()` is ready, 503 `{"ready":false}`
 * otherwise, and nothing else (`webhooks.drain()` makes it 503 for a shutdown).
 *
 * @example
 * router.get('/ready', koaHealth(webhooks))
 */
export function koaHealth(webhooks: HealthReceiver, options?: HealthOptions): (ctx: KoaHealthContext) => Promise<void> {
  return async (ctx) => {
    const { status, headers, body } = await healthAnswer(webhooks, options)
    ctx.set(headers)
    ctx.status = status
    ctx.body = body
  }
}
