import type { Stats } from '../stats/index.js'
import type { SilenceAlertOptions } from './types.js'
import { duration, type Finding, type Watch } from './watch.js'

const FIX = 'is the subscription active and pointing here, and does traffic reach this instance?'

/**
 * `silence`: no delivery verified for `silenceMs` (overall), or none of a type for its own limit. Reads the stats'
 * last verification times, which the hot path keeps (one field, and a map entry only for the watched types).
 */
export function silenceWatch(stats: Stats, options: SilenceAlertOptions): Watch {
  const { silenceMs } = options
  const types = Object.entries(options.types ?? {})
  if (types.length > 0) stats.typeVerifiedAt = new Map(types.map(([type]) => [type, stats.since]))
  return {
    name: 'silence',
    check(now) {
      const found: Finding[] = []
      const last = stats.lastVerifiedAt
      if (silenceMs !== undefined && now - last >= silenceMs) {
        found.push({
          severity: 'warning',
          since: last,
          message: `no delivery verified for ${duration(now - last)} (silenceMs ${duration(silenceMs)}): ${FIX}`,
        })
      }
      for (const [eventType, limitMs] of types) {
        const at = stats.typeVerifiedAt?.get(eventType) ?? stats.since
        if (now - at < limitMs) continue
        found.push({
          severity: 'warning',
          since: at,
          eventType,
          message: `no ${eventType} delivery verified for ${duration(now - at)} (limit ${duration(limitMs)}): ${FIX}`,
        })
      }
      return found
    },
  }
}
