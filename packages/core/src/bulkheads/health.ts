import type { HealthCheck } from '../health/types.js'
import type { Bulkheads } from './bulkheads.js'

/**
 * The bulkheads' checks, while there is something to say (as `hung_handlers`): `overrunning_handlers` while a run's
 * handlers still run past `deadlineMs`, naming the oldest; `quarantined_types` while a type is quarantined. Warnings:
 * the instance still handles every other type, so taking it out of the balancer (or restarting it) would not help.
 */
export function bulkheadChecks(bulkheads: Bulkheads): HealthCheck[] {
  const checks: HealthCheck[] = []
  const { count, oldest } = bulkheads.overrunning()
  if (oldest !== null) {
    checks.push({
      name: 'overrunning_handlers',
      ok: false,
      severity: 'warning',
      detail: `${count} run${count === 1 ? '' : 's'} still running past deadlineMs (${bulkheads.deadlineMs} ms); the oldest, ${oldest.eventType} ${oldest.eventId}, since ${oldest.since.toISOString()}`,
      fix: 'find the call that ignores context.signal or waits without a timeout (a fetch or query without the signal) and pass the signal on',
    })
  }
  const quarantined = bulkheads.quarantined()
  if (quarantined.length > 0) {
    const types = quarantined.map(
      ({ eventType, since, overrunning }) =>
        `${eventType} since ${since.toISOString()} (${overrunning} run${overrunning === 1 ? '' : 's'} past deadlineMs)`,
    )
    checks.push({
      name: 'quarantined_types',
      ok: false,
      severity: 'warning',
      detail: `deliveries answered 503 quarantined: ${types.join('; ')}`,
      fix: "fix the type's handler (it ignores context.signal); the quarantine lifts once one of its runs settles, or restart the instance to free their slots",
    })
  }
  return checks
}
