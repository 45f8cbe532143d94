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
 * The answer of a readiness route: 200 `{"ready":true,...}` when ready, else 503 with the names of the failed
 * checks in `failed`. Each check shows its name, whether it passed, its severity and latency; its `detail` and
 * `fix` stay in the logs and in `webhooks.health()`, so a route reachable by others tells nothing about the set-up.
 *
 * @example
 * const { status, headers, body } = await healthAnswer(webhooks)
 */
export async function healthAnswer(webhooks: HealthReceiver, options?: HealthOptions): Promise<HealthAnswer> {
  let report: HealthReport
  try {
    report = await webhooks.health(options)
  } catch {
    report = { ready: false, checks: [{ name: 'health', ok: false }] }
  }
  const checks = report.checks.map(({ name, ok, severity, latencyMs }) => ({ name, ok, severity, latencyMs }))
  const failed = report.checks.filter((check) => !check.ok && check.severity !== 'warning').map(({ name }) => name)
  return {
    status: report.ready ? 200 : 503,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
    body: JSON.stringify({ ready: report.ready, failed, checks }),
  }
}

/**
 * A readiness route for fetch-style runtimes (Workers, Bun, Deno, Next.js route handlers): 200 when
 * `webhooks.health()` is ready, 503 with the failed check names otherwise.
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
