import type { Run, RunWatcher } from '../dispatch/claims.js'
import { Slots } from '../dispatch/slots.js'
import { QuarantinedError } from '../errors/index.js'
import { type EventHandler, report, warn } from '../event-handler/index.js'
import { Deadlines } from '../http/deadline.js'
import type { OverrunningRuns, QuarantinedType } from '../stats/types.js'
import type { VerifiedEvent } from '../types.js'
import type { CheckedBulkheads } from './options.js'

/**
 * Event types given a lane of their own; past it, further types share one. Types come signed from the service (a
 * fixed few), so this only bounds memory against a sender that signs whatever it likes.
 */
const MAX_LANES = 1000
const OVERFLOW = '(other types)'

/** One event type's bulkhead: its share of the slots, its runs overrunning now, and whether it is quarantined. */
export class Lane {
  /** Its runs whose handlers still run `deadlineMs` after the claim. */
  overrunning = 0
  /** When it was quarantined (`Date.now()` clock); 0 while it is not. */
  quarantinedSince = 0

  constructor(
    readonly type: string,
    /** The slots it may hold: `Infinity` when `maxConcurrentEvents` is unbounded. */
    readonly share: number,
    /** Its share as a `Slots` of its own; undefined when the share is every slot (or unbounded). */
    readonly slots: Slots | undefined,
    readonly quarantineAfter: number,
  ) {}
}

/**
 * A receiver's bulkheads between event types (issue 47). Watches every run whose handlers went asynchronous, with one
 * timer between them (every run has the same `deadlineMs`, so the list stays sorted by appending): a run still going
 * `deadlineMs` after its claim is overrunning at once, not only once `maxRunMs` makes it hung. With `bulkheads` on,
 * each type has a {@link Lane}: its share of the slots, and its quarantine while `quarantineAfter` of its runs
 * overrun (reported to `onError` when it starts, logged when it lifts).
 */
export class Bulkheads implements RunWatcher {
  readonly #lanes = new Map<string, Lane>()
  /** Runs whose handlers run, by when they overrun. */
  readonly #watched: Deadlines<Run>
  /** Runs overrunning now, with since when; a Map keeps insertion order, so the first is the oldest. */
  readonly #overrunning = new Map<Run, number>()
  #quarantined = 0

  constructor(
    /** The checked `bulkheads` option; undefined when off (overrunning runs are still counted). */
    readonly config: CheckedBulkheads | undefined,
    readonly maxConcurrentEvents: number,
    readonly deadlineMs: number,
    readonly eventHandler: EventHandler,
  ) {
    this.#watched = new Deadlines((run) => this.#overran(run))
  }

  /** The lane of `type`, made on first sight; undefined with bulkheads off. */
  lane(type: string): Lane | undefined {
    const config = this.config
    if (config === undefined) return undefined
    return this.#lanes.get(type) ?? this.#newLane(type, config)
  }

  /** The refusal of `event`, whose type is quarantined. */
  refusal(lane: Lane, event: VerifiedEvent): QuarantinedError {
    const since = new Date(lane.quarantinedSince)
    return new QuarantinedError(lane.overrunning, since, this.deadlineMs, event.event_id, event.event_type)
  }

  /** A run's handlers went asynchronous: watched until they settle. */
  held(run: Run): void {
    run.due = Date.now() + this.deadlineMs
    this.#watched.add(run)
  }

  /** A run's handlers settled: no longer watched, or no longer overrunning (which may lift its type's quarantine). */
  dropped(run: Run): void {
    if (run.linked) {
      this.#watched.remove(run)
      return
    }
    const since = this.#overrunning.get(run)
    if (since === undefined) return
    this.#overrunning.delete(run)
    const lane = this.lane(run.eventType)
    if (lane === undefined) return
    lane.overrunning--
    if (lane.quarantinedSince === 0 || lane.overrunning >= lane.quarantineAfter) return
    const seconds = Math.round((Date.now() - lane.quarantinedSince) / 1000)
    lane.quarantinedSince = 0
    this.#quarantined--
    warn(
      this.eventHandler,
      { code: 'quarantine_lifted', event_type: lane.type },
      `event type ${lane.type} no longer quarantined after ${seconds} s: one of its runs past deadlineMs settled (${lane.overrunning} still running)`,
    )
  }

  /** Runs overrunning now, and the oldest. */
  overrunning(): OverrunningRuns {
    const first = this.#overrunning.entries().next()
    if (first.done) return { count: 0, oldest: null }
    const [run, since] = first.value
    return {
      count: this.#overrunning.size,
      oldest: { eventId: run.eventId, eventType: run.eventType, since: new Date(since) },
    }
  }

  /** How many runs overrun now (no allocation, for the gauge). */
  get overrunningCount(): number {
    return this.#overrunning.size
  }

  /** Dispatches waiting for one of their type's slots now. */
  get waiting(): number {
    let waiting = 0
    for (const lane of this.#lanes.values()) waiting += lane.slots?.waiting ?? 0
    return waiting
  }

  /** How many types are quarantined now (no allocation, for the gauge). */
  get quarantinedCount(): number {
    return this.#quarantined
  }

  /** The types quarantined now, longest first. */
  quarantined(): QuarantinedType[] {
    const types: QuarantinedType[] = []
    if (this.#quarantined === 0) return types
    for (const lane of this.#lanes.values()) {
      if (lane.quarantinedSince === 0) continue
      types.push({
        eventType: lane.type,
        since: new Date(lane.quarantinedSince),
        overrunning: lane.overrunning,
        slots: lane.share === Number.POSITIVE_INFINITY ? null : lane.share,
      })
    }
    return types.sort((a, b) => a.since.getTime() - b.since.getTime())
  }

  /** Rejects every dispatch still waiting for its type's slots (the receiver is closing). */
  stop(error: Error): void {
    for (const lane of this.#lanes.values()) lane.slots?.stop(error)
  }

  #newLane(type: string, config: CheckedBulkheads): Lane {
    if (this.#lanes.size >= MAX_LANES) {
      const shared = this.#lanes.get(OVERFLOW)
      if (shared !== undefined) return shared
      type = OVERFLOW
    }
    const share = config.slotsOf(type)
    const own = share < this.maxConcurrentEvents ? new Slots(share, this.maxConcurrentEvents) : undefined
    const lane = new Lane(type, share, own, config.quarantineAfterOf(share))
    this.#lanes.set(type, lane)
    return lane
  }

  /** A run's handlers were still running `deadlineMs` after its claim. */
  #overran(run: Run): void {
    // Since its due, not now: a timer may fire a millisecond before Date.now() reaches it, or late on a busy loop.
    // A quarantine this run starts starts then too.
    const since = run.due
    this.#overrunning.set(run, since)
    const lane = this.lane(run.eventType)
    if (lane === undefined) return
    lane.overrunning++
    if (lane.quarantinedSince !== 0 || lane.overrunning < lane.quarantineAfter) return
    lane.quarantinedSince = since
    this.#quarantined++
    const error = new QuarantinedError(lane.overrunning, new Date(since), this.deadlineMs, run.eventId, lane.type, true)
    report(this.eventHandler, error)
  }
}
