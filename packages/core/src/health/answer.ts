import type { HealthOptions, HealthReport } from './types.js'

/** The part of a receiver a readiness route uses. */
export interface HealthReceiver {
  health(options?: HealthOptions): Promise<HealthReport>
}

/** A readiness route's answer: status, headers and JSON body. */
export interface HealthAnswer {
  /** 200 when ready, 503 otherwise. */
  status: 200 | 503
  headers: Record<string, string>
  body: string
}

/**
 * The answer of a readiness route: 200 `{"ready":true}` when ready, else 503 `{"ready":false}`, and nothing else. A
 * balancer needs the yes or no; the checks' names, the store's kind, its persistence and its latency stay in
 * `webhooks.health()`, the logs and the console, so a route reachable by others tells nothing about the set-up.
 *
 * @example
 * const { status, headers, body } = await healthAnswer(webhooks)
 */
export async function healthAnswer(webhooks: HealthReceiver, options?: HealthOptions): Promise<HealthAnswer> {
  let ready: boolean
  try {
    ready = (await webhooks.health(options)).ready
  } catch {
    ready = false
  }
  return {
    status: ready ? 200 : 503,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
    body: ready ? READY : NOT_READY,
  }
}

const READY = JSON.stringify({ ready: true })
const NOT_READY = JSON.stringify({ ready: false })

/**
 * A readiness route for fetch-style runtimes (Workers, Bun, Deno, Next.js route handlers): 200 `{"ready":true}` when
 * `webhooks.health()` is ready, 503 `{"ready":false}` otherwise.
 *
 * @example
 * if (new URL(request.url).pathname === '/ready') return webHealth(webhooks)()
 */
export function webHealth(webhooks: HealthReceiver, options?: HealthOptions): () => Promise<Response> {
  return async () => {
    const { status, headers, body } = await healthAnswer(webhooks, options)
    return new Response(body, { status, headers })
  }
}
