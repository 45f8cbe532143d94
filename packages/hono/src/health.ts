import { type HealthOptions, type HealthReceiver, webHealth } from '@payhooks/core'

/**
 * A readiness route: 200 `{"ready":true}` when `webhooks.health()` is ready, 503 `{"ready":false}`
 * otherwise, and nothing else (`webhooks.drain()` makes it 503 for a shutdown).
 *
 * @example
 * app.get('/ready', honoHealth(webhooks))
 */
export function honoHealth(webhooks: HealthReceiver, options?: HealthOptions): () => Promise<Response> {
  return webHealth(webhooks, options)
}
