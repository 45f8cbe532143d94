// The overview: panels gathered each on its own, in parallel, each within a time limit, so one that fails or
// hangs (the dead-letter counts while the store is down, the journal) leaves the others (health, this instance's
// figures) showing, and says so in its place. A panel is a name and a function: add one to PANELS.
import type { Alert, DeadLetterCode } from '@payhooks/core'
import { countParked } from './api.js'
import { type JournaledWebhooks, journalOf } from './events.js'
import { instanceSummary } from './instance.js'
import { pausedPanel } from './pauses.js'

const CODES: DeadLetterCode[] = ['schema_mismatch', 'handler_failed', 'stale_event', 'paused']

/**
 * Outcomes of the journal's own accounts, not answers: work settled after the deadline (`<outcome>_late`), dead
 * letters replayed (`replay_<status>`), answers dropped (`journal_dropped`, `journal_gap`).
 */
const isAccount = (outcome: string): boolean =>
  outcome.endsWith('_late') || outcome.startsWith('replay_') || outcome.startsWith('journal_')

/** How long a panel may take before its place says it could not be gathered. */
export const PANEL_TIMEOUT_MS = 2_000

interface HealthCheck {
  name: string
  ok: boolean
  [field: string]: unknown
}

type MaybeHealth = JournaledWebhooks & {
  health?: () => Promise<{ ready: boolean; checks: HealthCheck[] }>
  alerts?: () => Alert[]
}

/** Only these fields of a check (core's HealthCheck) are shown: any other field a store adds might name a host. */
const SHOWN = ['name', 'ok', 'severity', 'detail', 'fix', 'latencyMs']

/** One panel: what it shows, gathered from the receiver (null when the receiver has nothing for it). */
type Panel = (webhooks: MaybeHealth) => unknown

const PANELS: Record<string, Panel> = {
  // First: its gauges are read at once, before the other panels' calls count as work in flight.
  instance: (webhooks) => instanceSummary(webhooks),
  // What operators paused (every instance sharing the pause store), and the types one may pause; null without.
  paused: (webhooks) => pausedPanel(webhooks),
  async deadLetters(webhooks) {
    const counts = await Promise.all(CODES.map((code) => countParked(webhooks, { code })))
    const byCode = Object.fromEntries(CODES.map((code, i) => [code, counts[i] as number]))
    const parked = counts.reduce((sum, n) => sum + n, 0)
    return { parked, byCode, durable: webhooks.deadLetters.durable ?? null }
  },
  // The fleet's answers, every instance together, from the journal (its accounts by outcome, not among the answers
  // per minute); null without one.
  async journal(webhooks) {
    const events = journalOf(webhooks)
    if (!events) return null
    const { from, perMinute, total } = await events.counts({ minutes: 60 })
    const last15: Record<string, number> = {}
    for (const minute of perMinute.slice(-15)) {
      for (const [outcome, count] of Object.entries(minute)) last15[outcome] = (last15[outcome] ?? 0) + count
    }
    return {
      from: from.toISOString(),
      last15,
      last60: total,
      perMinute: perMinute.map((counts) =>
        Object.entries(counts).reduce((sum, [outcome, n]) => sum + (isAccount(outcome) ? 0 : n), 0),
      ),
    }
  },
  // The alerts this instance raised and has not resolved (`webhooks.alerts()`); null from a core without them.
  alerts(webhooks) {
    if (typeof webhooks.alerts !== 'function') return null
    return webhooks.alerts().map((alert) => ({
      name: alert.name,
      severity: alert.severity,
      since: alert.since.toISOString(),
      message: alert.message,
      ...(alert.eventType === undefined ? {} : { eventType: alert.eventType }),
    }))
  },
  async health(webhooks) {
    if (typeof webhooks.health !== 'function') return null
    const result = await webhooks.health()
    return {
      ready: result.ready,
      checks: result.checks.map((check) =>
        Object.fromEntries(Object.entries(check).filter(([key, value]) => SHOWN.includes(key) && value !== undefined)),
      ),
    }
  },
}

/** `gather`'s value, or why it has none: a fixed line, never the error's own text (it may name a host). */
async function within(gather: () => unknown, timeoutMs: number): Promise<{ value: unknown } | { failed: string }> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<{ failed: string }>((resolve) => {
    timer = setTimeout(() => resolve({ failed: `no answer within ${timeoutMs} ms` }), timeoutMs)
  })
  try {
    return await Promise.race([
      (async () => ({ value: await gather() }))().catch(() => ({ failed: 'could not be gathered' })),
      late,
    ])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * The overview's panels by name (null where the receiver has nothing for one), and `failed`: the panels that
 * failed or took longer than `timeoutMs`, each with why.
 */
export async function overview(webhooks: MaybeHealth, timeoutMs = PANEL_TIMEOUT_MS) {
  const names = Object.keys(PANELS)
  const results = await Promise.all(names.map((name) => within(() => PANELS[name]?.(webhooks), timeoutMs)))
  const answer: Record<string, unknown> = {}
  const failed: Record<string, string> = {}
  names.forEach((name, i) => {
    const result = results[i] as { value: unknown } | { failed: string }
    if ('failed' in result) {
      answer[name] = null
      failed[name] = result.failed
    } else answer[name] = result.value ?? null
  })
  return { ...answer, failed }
}
