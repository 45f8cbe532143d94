import { bounded } from './bounded.js'
import { duration, type Watch } from './watch.js'

/**
 * `dead_letters_growing`: the parked letters (one `count` every `everyMs`) grew by `growth` or more within
 * `windowMs`; resolved once they have not grown over a whole window (replayed, or simply no more parked).
 */
export function deadLettersGrowingWatch(
  count: () => Promise<number>,
  options: { growth: number; windowMs: number; everyMs: number },
): Watch {
  const { growth, windowMs, everyMs } = options
  const samples: { at: number; count: number }[] = []
  let raised = false
  return {
    name: 'dead_letters_growing',
    everyMs,
    async check(now, signal) {
      const parked = await bounded(count, signal)
      if (typeof parked !== 'number') return undefined
      samples.push({ at: now, count: parked })
      while (samples.length > 1 && (samples[0] as { at: number }).at < now - windowMs) samples.shift()
      const base = samples[0] as { at: number; count: number }
      const grown = parked - base.count
      // Resolved only by a whole window without growth: a slower pile-up keeps it raised.
      const quiet = grown <= 0 && now - base.at >= windowMs - everyMs
      if (grown >= growth || (raised && !quiet)) {
        raised = true
        return [
          {
            severity: 'warning',
            since: base.at,
            message: `dead letters parked grew by ${Math.max(grown, 0)} to ${parked} within ${duration(windowMs)}: see why (webhooks.deadLetters.list, the board) and replay them`,
          },
        ]
      }
      raised = false
      return []
    },
  }
}
