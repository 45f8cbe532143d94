import type { HungRuns } from '../stats/index.js'
import type { Watch } from './watch.js'

/**
 * `handlers_hung`: at least `count` runs hung past `maxRunMs` (their signal aborted, still running, each holding its
 * event and slot); critical once they hold every event slot.
 */
export function handlersHungWatch(count: number, hung: () => HungRuns, maxSlots: number | undefined): Watch {
  return {
    name: 'handlers_hung',
    check() {
      const { count: now, oldest } = hung()
      if (now < count || oldest === null) return []
      const full = maxSlots !== undefined && now >= maxSlots
      const slots = maxSlots === undefined ? '' : ` of ${maxSlots} event slots`
      return [
        {
          severity: full ? 'critical' : 'warning',
          since: oldest.since.getTime(),
          message: `${now}${slots} held by handlers hung past maxRunMs: find the call that ignores context.signal${full ? ', and restart this instance' : ''}`,
        },
      ]
    },
  }
}
