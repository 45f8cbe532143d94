/**
 * Milliseconds of signature-doctor work a receiver spends per second at most (5% of one core). Past it, failed
 * checks get `not_diagnosed`.
 */
export const DOCTOR_MS_PER_SECOND = 50

/** The most doctor time saved up while idle: what a burst of failed checks can spend back to back. */
export const DOCTOR_BURST_MS = 10

/**
 * Milliseconds of doctor work one source (a client address) may take per second: a fifth of the receiver's, so a
 * flood from one address leaves the rest to the failed checks of every other sender.
 */
export const DOCTOR_SOURCE_MS_PER_SECOND = 10

/** Sources whose share is kept at once; past it, new sources share one share until some are full again. */
export const DOCTOR_MAX_SOURCES = 1024

/** A bucket of doctor time: `ms` left, refilled at a rate up to a burst. */
export interface DoctorBudget {
  /** Milliseconds left; below zero after a diagnosis that cost more than was left. */
  ms: number
  /** `performance.now()` when `ms` was last refilled. */
  at: number
  /** A diagnosis is under way (only an asynchronous HMAC provider lets two overlap). */
  busy: boolean
}

const doctorBudget = (): DoctorBudget => ({ ms: DOCTOR_BURST_MS, at: performance.now(), busy: false })

const refill = (budget: DoctorBudget, now: number, perSecond: number) => {
  budget.ms = Math.min(DOCTOR_BURST_MS, budget.ms + ((now - budget.at) * perSecond) / 1000)
  budget.at = now
}

/**
 * A receiver's doctor time: a bucket of {@link DOCTOR_BURST_MS} refilled at {@link DOCTOR_MS_PER_SECOND} for all,
 * and one per source refilled at {@link DOCTOR_SOURCE_MS_PER_SECOND}; a diagnosis needs time left in both. At most
 * {@link DOCTOR_MAX_SOURCES} sources are kept (a full bucket is forgotten, as a new one would be full): a spray of
 * addresses past it shares one bucket, so memory stays bounded and the total never exceeds the receiver's.
 */
export class DoctorBudgets {
  private readonly total = doctorBudget()
  private readonly sources = new Map<string, DoctorBudget>()
  /** The bucket of sources that found the map full. */
  private readonly overflow = doctorBudget()
  /** When full buckets were last looked for: at most every 100 ms, so a spray does not walk the map each time. */
  private sweptAt = Number.NEGATIVE_INFINITY

  /**
   * `diagnose()`'s answer, or `undefined` when `source` or the receiver has no time left, or a diagnosis is under
   * way. Anyone can post unsigned bodies to the route: the time each diagnosis took, not their count, is taken from
   * both buckets, so a flood of failed checks costs the doctor at most {@link DOCTOR_MS_PER_SECOND} a second
   * whatever the bodies hold, and one address at most {@link DOCTOR_SOURCE_MS_PER_SECOND}. One at a time, so that
   * diagnoses started together cannot all draw on the same milliseconds.
   */
  async within<T>(source: string | undefined, diagnose: () => Promise<T>): Promise<T | undefined> {
    const start = performance.now()
    const total = this.total
    refill(total, start, DOCTOR_MS_PER_SECOND)
    const own = this.bucketOf(source ?? '', start)
    refill(own, start, DOCTOR_SOURCE_MS_PER_SECOND)
    if (total.busy || total.ms <= 0 || own.ms <= 0) return undefined
    total.busy = true
    try {
      return await diagnose()
    } finally {
      const spent = performance.now() - start
      total.ms -= spent
      own.ms -= spent
      total.busy = false
    }
  }

  private bucketOf(source: string, now: number): DoctorBudget {
    const known = this.sources.get(source)
    if (known !== undefined) return known
    if (this.sources.size >= DOCTOR_MAX_SOURCES) {
      if (now - this.sweptAt < 100) return this.overflow
      this.sweptAt = now
      for (const [key, budget] of this.sources) {
        refill(budget, now, DOCTOR_SOURCE_MS_PER_SECOND)
        if (budget.ms >= DOCTOR_BURST_MS) this.sources.delete(key)
      }
      if (this.sources.size >= DOCTOR_MAX_SOURCES) return this.overflow
    }
    const budget = { ms: DOCTOR_BURST_MS, at: now, busy: false }
    this.sources.set(source, budget)
    return budget
  }
}
