import type { IncomingMessage, ServerResponse } from 'node:http'
import type { HealthOptions, HealthReceiver } from '@payhooks/core'
import { nodeHealth } from '@payhooks/core/node'

/**
 * A readiness route: 200 `{"ready":true}` when `webhooks.health()` is ready, 503 `{"ready":false}`
 * otherwise, and nothing else (`webhooks.drain()` makes it 503 for a shutdown). Mount it where the load balancer probes.
 *
 * @example
 * app.get('/ready', expressHealth(webhooks))
 */
export function expressHealth(
  webhooks: HealthReceiver,
  options?: HealthOptions,
): (req: IncomingMessage, res: ServerResponse) => void {
  return nodeHealth(webhooks, options)
}
