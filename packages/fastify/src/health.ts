import { type HealthOptions, type HealthReceiver, healthAnswer } from '@payhooks/core'

/** The part of Fastify's reply the readiness route uses. */
export interface FastifyHealthReply {
  code(status: number): FastifyHealthReply
  headers(values: Record<string, string>): FastifyHealthReply
  send(body: string): unknown
}

/**
 * A readiness route: 200 `{"ready":true}` when `webhooks.health()` is ready, 503 `{"ready":false}`
 * otherwise, and nothing else (`webhooks.drain()` makes it 503 for a shutdown).
 *
 * @example
 * app.get('/ready', fastifyHealth(webhooks))
 */
export function fastifyHealth(
  webhooks: HealthReceiver,
  options?: HealthOptions,
): (request: unknown, reply: FastifyHealthReply) => Promise<unknown> {
  return async (_request, reply) => {
    const { status, headers, body } = await healthAnswer(webhooks, options)
    return reply.code(status).headers(headers).send(body)
  }
}
