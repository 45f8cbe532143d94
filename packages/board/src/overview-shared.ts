// The overview, shared between the operators who load it within a second of each other (as `health()` shares its
// checks): three consoles reloading it in a loop cost the stores one gathering a second, not one per load, so a
// live receiver on the same stores keeps its latency.
import { overview } from './overview.js'
import type { BoardWebhooks } from './types.js'

/** How long one gathering of the overview answers every load. */
export const OVERVIEW_MAX_AGE_MS = 1_000

const last = new WeakMap<BoardWebhooks, { startedAt: number; answer: ReturnType<typeof overview> }>()

/** The overview gathered less than `maxAgeMs` ago (or under way), else a new one. */
export function sharedOverview(webhooks: BoardWebhooks, maxAgeMs = OVERVIEW_MAX_AGE_MS): ReturnType<typeof overview> {
  const now = Date.now()
  const found = last.get(webhooks)
  if (found && now - found.startedAt < maxAgeMs) return found.answer
  const answer = overview(webhooks)
  last.set(webhooks, { startedAt: now, answer })
  return answer
}
