// The once-only check of --ledger over the whole run, for the report's summary: whether it ran, and whether every
// event was handled as its answers say it must be.
import { is2xx } from './check.js'
import type { Answer, Ledger } from './types.js'

/** The once-only check of a run: not run (no --ledger), or run, with what it found. */
export type OnceOnly =
  | { checked: false }
  | {
      checked: true
      passed: boolean
      /** Event ids acknowledged for handling, each of which must show exactly one run. */
      acknowledged: number
      /** Event ids refused (answered, never 2XX), each of which must show no run. */
      refused: number
      /** One line per event handled other than its answers say, such as `evt_prove_…_4: acknowledged, ran 0 times`. */
      problems: string[]
    }

/**
 * Judges the ledger against every answer of the run: an event in `shouldRun` (acknowledged, not parked) ran exactly
 * once; one answered only non-2XX statuses never ran; any other (parked, an unknown type, no answer) at most once.
 */
export function onceOnly(
  ledger: Ledger | undefined,
  answers: readonly Answer[],
  shouldRun: readonly string[],
): OnceOnly {
  if (!ledger) return { checked: false }
  const mustRun = new Set(shouldRun)
  const byId = new Map<string, Answer[]>()
  for (const answer of answers) {
    if (answer.eventId === undefined) continue
    byId.set(answer.eventId, [...(byId.get(answer.eventId) ?? []), answer])
  }
  const problems: string[] = []
  let refused = 0
  for (const [id, got] of byId) {
    const runs = ledger[id] ?? 0
    if (mustRun.has(id)) {
      if (runs !== 1) problems.push(`${id}: acknowledged, ran ${runs} times`)
    } else if (!got.some(is2xx) && got.some((answer) => answer.status !== undefined)) {
      refused += 1
      if (runs !== 0) problems.push(`${id}: refused, ran ${runs} times`)
    } else if (runs > 1) problems.push(`${id}: ran ${runs} times`)
  }
  return { checked: true, passed: problems.length === 0, acknowledged: mustRun.size, refused, problems }
}
