/**
 * Milliseconds of signature-doctor work a receiver spends per second at most (5% of one core). Past it, failed
 * checks get `not_diagnosed`.
 */
export const DOCTOR_MS_PER_SECOND = 50

/** The most doctor time saved up while idle: what a burst of failed checks can spend back to back. */
export const DOCTOR_BURST_MS = 10

/** A receiver's doctor time: a bucket of {@link DOCTOR_BURST_MS} refilled at {@link DOCTOR_MS_PER_SECOND}. */
export interface DoctorBudget {
  /** Milliseconds left; below zero after a diagnosis that cost more than was left. */
  ms: number
  /** `performance.now()` when `ms` was last refilled. */
  at: number
  /** A diagnosis is under way (only an asynchronous HMAC provider lets two overlap). */
  busy: boolean
}

export const doctorBudget = (): DoctorBudget => ({ ms: DOCTOR_BURST_MS, at: performance.now(), busy: false })

/**
 * `diagnose()`'s answer, or `undefined` when the budget has no time left or a diagnosis is under way. Anyone can
 * post unsigned bodies to the route: the time each diagnosis took, not their count, is taken from the budget, so a
 * flood of failed checks costs the doctor at most {@link DOCTOR_MS_PER_SECOND} a second whatever the bodies hold.
 * One at a time, so that diagnoses started together cannot all draw on the same milliseconds.
 */
export async function withinBudget<T>(budget: DoctorBudget, diagnose: () => Promise<T>): Promise<T | undefined> {
  const start = performance.now()
  budget.ms = Math.min(DOCTOR_BURST_MS, budget.ms + ((start - budget.at) * DOCTOR_MS_PER_SECOND) / 1000)
  budget.at = start
  if (budget.busy || budget.ms <= 0) return undefined
  budget.busy = true
  try {
    return await diagnose()
  } finally {
    budget.ms -= performance.now() - start
    budget.busy = false
  }
}
