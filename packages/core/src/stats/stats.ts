import type { WebhookError } from '../errors/index.js'
import type { Pause } from '../pause/types.js'
import type { VerifiedSecret } from '../verify/secrets.js'
import { BUCKETS, bucketOf, quantile } from './latency.js'
import { Retrying } from './retrying.js'
import { clearSlots, periodOf, sumSlots } from './ring.js'
import { SecretCounts } from './secrets.js'
import type { HungRuns, OverrunningRuns, QuarantinedType, ReceiverStats } from './types.js'

const MINUTE = 60_000
const MINUTES = 60
/** The most outcome names counted: the receiver's are a fixed few dozen (its answers' codes). */
const OUTCOMES = 64

/** Refusals of a request without a valid signature: counted apart, out of the latency of signed deliveries. */
const SIGNATURE_REFUSALS: ReadonlySet<string> = new Set(['missing_signature', 'invalid_signature'])

/** What a delivery's answer tells the stats. */
export interface Answered {
  readonly event: { event_id: string; event_type: string } | undefined
  readonly error: WebhookError | undefined
  readonly verifiedWith: VerifiedSecret | undefined
}

/** Reads the gauges of the receiver. */
export interface Gauges {
  inFlight(): number
  waiting(): number
  hung(): HungRuns
  overrunning(): OverrunningRuns
  quarantined(): QuarantinedType[]
  /** The pauses in force, as this process last read them. */
  paused?(): Pause[]
}

/**
 * A receiver's in-process delivery stats. Recording an answer is O(1) and allocates nothing on the 2XX path
 * (a Map entry per outcome per minute, a histogram slot, a secret's hour): rings of 60 minutes and 72 hours.
 */
export class Stats {
  readonly since = Date.now()
  private minute = 0
  private minuteStart = 0
  private minuteEnd = 0
  /** `minute`'s slot in the rings. */
  private current = 0
  // Counts per minute and outcome, by the outcome's number in `names`; the last outcome's number is kept, since
  // nearly every delivery has the same one ('processed'): no Map lookup on the hot path.
  private readonly outcomes = new Uint32Array(MINUTES * OUTCOMES)
  private readonly numbers = new Map<string, number>()
  private readonly names: string[] = []
  private lastOutcome = ''
  private lastNumber = -1
  private readonly latency = new Uint32Array(MINUTES * BUCKETS)
  private readonly conflicts = new Uint32Array(MINUTES)
  private readonly retrying = new Retrying()
  private readonly secrets = new SecretCounts()
  /** When a delivery last verified (ms); the receiver's creation before any. Read by the alerts' timer. */
  lastVerifiedAt = this.since
  /** Deliveries refused `invalid_signature` since the last that verified, and when the first of them was. */
  invalidRun = 0
  invalidRunStart = 0
  /** Per event type the alerts watch for silence, when one last verified; undefined when none is watched. */
  typeVerifiedAt: Map<string, number> | undefined = undefined

  /**
   * A delivery was answered `status` (`outcome` as telemetry names it); `arrivedAt` is its first byte, NaN when
   * it has none (refused before any work).
   */
  answered(delivery: Answered, outcome: string, status: number, arrivedAt: number): void {
    const now = Date.now()
    const slot = this.slot(now)
    const number = outcome === this.lastOutcome ? this.lastNumber : this.numberOf(outcome)
    if (number >= 0) (this.outcomes[slot * OUTCOMES + number] as number)++
    // A sender without the secret (a scanner, a flood) must not move the figures of the service's deliveries.
    if (!Number.isNaN(arrivedAt) && (status !== 401 || !SIGNATURE_REFUSALS.has(outcome))) {
      ;(this.latency[slot * BUCKETS + bucketOf(now - arrivedAt)] as number)++
    }
    const event = delivery.event
    if (delivery.verifiedWith) {
      this.secrets.verified(delivery.verifiedWith, now)
      this.lastVerifiedAt = now
      this.invalidRun = 0
      const seen = this.typeVerifiedAt
      if (seen !== undefined && event !== undefined && seen.has(event.event_type)) seen.set(event.event_type, now)
    } else if (outcome === 'invalid_signature' && this.invalidRun++ === 0) this.invalidRunStart = now
    if (status < 300) {
      if (event && this.retrying.ids.size > 0) this.retrying.handled(event.event_id)
      return
    }
    // A schema mismatch carries the event it refused.
    const failed = event ?? (delivery.error as { event?: { event_id: string; event_type: string } } | undefined)?.event
    if (failed) this.retrying.failed(failed, outcome, status, now)
  }

  /** A copy of an event arrived with other bytes (an `EventConflictError` was reported). */
  conflict(): void {
    ;(this.conflicts[this.slot(Date.now())] as number)++
  }

  read(gauges: Gauges): ReceiverStats {
    const now = Date.now()
    this.slot(now)
    const minute = this.minute
    const perMinute: Record<string, number>[] = []
    const total: Record<string, number> = {}
    for (let m = minute - MINUTES + 1; m <= minute; m++) {
      const counts: Record<string, number> = {}
      const start = (m % MINUTES) * OUTCOMES
      this.names.forEach((outcome, number) => {
        const count = this.outcomes[start + number] as number
        if (count === 0) return
        counts[outcome] = count
        total[outcome] = (total[outcome] ?? 0) + count
      })
      perMinute.push(counts)
    }
    const sums = sumSlots(this.latency, BUCKETS)
    const count = sums.reduce((sum, n) => sum + n, 0)
    const missingSignature = total.missing_signature ?? 0
    const invalidSignature = total.invalid_signature ?? 0
    return {
      since: new Date(this.since),
      at: new Date(now),
      deliveries: { from: new Date((minute - MINUTES + 1) * MINUTE), perMinute, total },
      latency: { count, p50Ms: quantile(sums, count, 0.5), p99Ms: quantile(sums, count, 0.99) },
      inFlight: gauges.inFlight(),
      hung: gauges.hung(),
      overrunning: gauges.overrunning(),
      quarantined: gauges.quarantined(),
      paused: gauges.paused?.() ?? [],
      waiting: gauges.waiting(),
      conflicts: this.conflicts.reduce((sum, n) => sum + n, 0),
      refused: { count: missingSignature + invalidSignature, missingSignature, invalidSignature },
      retrying: this.retrying.read(now),
      secrets: this.secrets.read(now),
    }
  }

  /** The number of `outcome` in the counts, given on first sight; -1 once `OUTCOMES` names are taken. */
  private numberOf(outcome: string): number {
    let number = this.numbers.get(outcome)
    if (number === undefined) {
      if (this.names.length >= OUTCOMES) return -1
      number = this.names.push(outcome) - 1
      this.numbers.set(outcome, number)
    }
    this.lastOutcome = outcome
    this.lastNumber = number
    return number
  }

  /** The ring slot of the minute `now` falls in, moving the ring on (zeroing the minutes skipped) when needed. */
  private slot(now: number): number {
    // Within the current minute (nearly every call): no division.
    if (now >= this.minuteStart && now < this.minuteEnd) return this.current
    const minute = periodOf(now, MINUTE, this.minute)
    if (minute !== this.minute) {
      const last = this.minute
      clearSlots(this.outcomes, OUTCOMES, MINUTES, last, minute)
      clearSlots(this.latency, BUCKETS, MINUTES, last, minute)
      clearSlots(this.conflicts, 1, MINUTES, last, minute)
      this.minute = minute
      this.minuteStart = minute * MINUTE
      this.minuteEnd = this.minuteStart + MINUTE
      this.current = minute % MINUTES
    }
    return this.current
  }
}
