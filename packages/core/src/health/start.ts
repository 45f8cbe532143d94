import type { EventHandler } from '../event-handler/state.js'
import { escapeText } from '../logging/log.js'
import type { HealthCheck, HealthReport } from './types.js'

/** The line logged for a failed check at start: what is wrong, then the fix. */
function line(check: HealthCheck): string {
  const detail = check.detail ? `: ${check.detail}` : ''
  const fix = check.fix ? `. Fix: ${check.fix}` : ''
  return `[payhooks] health check ${check.name} failed${detail}${fix}`
}

/**
 * Runs `health` once, soon after the receiver is made (on a timer, so the first delivery never waits for it),
 * and logs each failed check with its fix: `error` for one that makes the receiver not ready, `warn` otherwise.
 * Nothing is logged once the receiver is closing, nor where the runtime has no timers at start (Workers' global
 * scope).
 */
export function checkAtStart(state: EventHandler, health: () => Promise<HealthReport>, closing: () => boolean): void {
  const run = () => {
    if (closing()) return
    health().then(
      (report) => {
        if (closing()) return
        for (const check of report.checks) {
          if (check.ok) continue
          const fields = { code: 'health_check_failed', check: check.name }
          if (check.severity === 'warning') state.log.warn(fields, escapeText(line(check)))
          else state.log.error(fields, escapeText(line(check)))
        }
      },
      () => {},
    )
  }
  try {
    const timer = setTimeout(run, 0) as { unref?: () => void }
    timer.unref?.()
  } catch {
    // Workers forbid timers in the global scope: no start-up check there; health() still works.
  }
}
