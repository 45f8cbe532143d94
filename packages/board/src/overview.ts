// The overview: dead letters by code (shared through the store, so every instance shows the same), and the
// receiver's health() checks when it has them.
import type { DeadLetterCode } from '@payhooks/core'
import { countParked } from './api.js'
import { instanceSummary } from './instance.js'
import type { BoardWebhooks } from './types.js'

const CODES: DeadLetterCode[] = ['schema_mismatch', 'handler_failed', 'stale_event']

interface HealthCheck {
  name: string
  ok: boolean
  [field: string]: unknown
}

type MaybeHealth = BoardWebhooks & { health?: () => Promise<{ ready: boolean; checks: HealthCheck[] }> }

/** Only these fields of a check (core's HealthCheck) are shown: any other field a store adds might name a host. */
const SHOWN = ['name', 'ok', 'severity', 'detail', 'fix', 'latencyMs']

export async function overview(webhooks: MaybeHealth) {
  const byCode: Record<string, number> = {}
  let parked = 0
  for (const code of CODES) {
    byCode[code] = await countParked(webhooks, { code })
    parked += byCode[code]
  }
  let health: { ready: boolean; checks: Record<string, unknown>[] } | null = null
  if (typeof webhooks.health === 'function') {
    const result = await webhooks.health()
    health = {
      ready: result.ready,
      checks: result.checks.map((check) =>
        Object.fromEntries(Object.entries(check).filter(([key, value]) => SHOWN.includes(key) && value !== undefined)),
      ),
    }
  }
  return {
    deadLetters: { parked, byCode, durable: webhooks.deadLetters.durable ?? null },
    health,
    instance: instanceSummary(webhooks),
  }
}
