// The figures of a replay-all run: one count per outcome, and the duplicates by when they were handled.
import type { ReplayCounts, ReplayOutcome } from './types.js'

export type Tally = ReplayCounts

/** Which count each outcome adds to (besides `tried`). */
const FIELD: Record<ReplayOutcome['status'], Exclude<keyof Tally, 'tried'>> = {
  processed: 'processed',
  duplicate: 'duplicate',
  queued: 'queued',
  in_progress: 'inProgress',
  failed: 'failed',
  not_found: 'notFound',
}

/** Every count at 0. */
export const tally = (): Tally =>
  Object.fromEntries(
    [['tried', 0], ...Object.values(FIELD).map((field) => [field, 0])].concat([
      ['duplicateMeanwhile', 0],
      ['duplicateBefore', 0],
    ]),
  ) as unknown as Tally

/** Adds `outcome` to `counts`: a duplicate handled since `startedAt` (ms) was handled meanwhile, one before, before. */
export function count(counts: Tally, outcome: ReplayOutcome, startedAt: number): void {
  counts.tried++
  counts[FIELD[outcome.status]]++
  if (outcome.status === 'duplicate' && outcome.handledAt !== undefined) {
    counts[outcome.handledAt.getTime() >= startedAt ? 'duplicateMeanwhile' : 'duplicateBefore']++
  }
}
