import type { HealthCheck } from '../health/types.js'
import type { Watch } from './watch.js'

/**
 * `store_memory`: a store's `*_memory` health check failed (Redis past 80% of `maxmemory`, or refusing writes for
 * lack of memory: critical from 95% or an OOM refusal, when claims are refused). Reads `health()`'s store checks,
 * shared with readiness probes, every `everyMs`.
 */
export function storeMemoryWatch(storeChecks: () => Promise<readonly HealthCheck[]>, everyMs: number): Watch {
  return {
    name: 'store_memory',
    everyMs,
    async check(now) {
      let checks: readonly HealthCheck[]
      try {
        checks = await storeChecks()
      } catch {
        return undefined
      }
      // Not its own check (`alert_store_memory`), which would keep it raised.
      const memory = checks.filter((check) => check.name.endsWith('_memory') && !check.name.startsWith('alert_'))
      // A store that did not answer cannot tell its memory: the alert stays as it was.
      if (memory.length === 0) return checks.some((check) => !check.ok && check.severity !== 'warning') ? undefined : []
      const failed = memory.filter((check) => !check.ok && check.detail !== 'memory could not be read (INFO refused)')
      if (failed.length === 0) return []
      const critical = failed.some((check) => check.severity !== 'warning')
      return [
        {
          severity: critical ? 'critical' : 'warning',
          since: now,
          message: `${failed.map((check) => `${check.name}: ${check.detail ?? 'failed'}`).join('; ')}${critical ? '' : ' (new claims are refused 503 once it is full)'}`,
        },
      ]
    },
  }
}
