import type { Pending } from '../http/deadline.js'
import type { HungRuns } from '../stats/types.js'
import type { LazyAbortController } from './lazy-abort.js'

/**
 * A dispatch that holds an event's claim while its handlers run. Its `Pending` links place it, while its handlers
 * run, in the list of runs watched for overrunning `deadlineMs` ({@link RunWatcher}).
 */
export interface Run extends Pending {
  readonly eventId: string
  readonly eventType: string
  readonly token: string
  /** The body digest the claim was taken with, for a copy refused while this run holds the event. */
  readonly digest: string | undefined
  /** Aborts the handlers' `context.signal`. */
  readonly controller: LazyAbortController
}

/** Told when a run's handlers go asynchronous and when they settle (the bulkheads' overrun watch). */
export interface RunWatcher {
  held(run: Run): void
  dropped(run: Run): void
}

/**
 * The one owner of a receiver's tracked work (as BullMQ's `LockManager` owns its locks): how many deliveries and
 * dispatches are under way, the runs holding a claim with their abort controllers, the done markers still retried
 * in the background, whether `close` stopped waiting, and the wait for the work to end. Only `close` stops:
 * {@link Claims.stop}.
 */
export class Claims {
  /** Deliveries and dispatches not finished yet (handlers included, even past the deadline). */
  #running = 0
  /** Work behind answers already given (done markers retried): waited for by `idle`, not counted as in flight. */
  #background = 0
  /**
   * Dispatches holding a claim now, with asynchronous handlers, by event id: `stop` aborts their signals, and a
   * copy of an event found here is refused without asking the store ({@link Claims.runOf}).
   */
  readonly #runs = new Map<string, Run>()
  /** Runs past `maxRunMs` still running, with since when; a Map keeps insertion order, so the first is the oldest. */
  readonly #hung = new Map<Run, number>()
  #stopped = false
  /** Called once no work is left, for the waits of {@link Claims.idle}. */
  readonly #onIdle: (() => void)[] = []

  constructor(readonly watcher?: RunWatcher) {}

  /** Deliveries and dispatches not finished yet, for the telemetry's gauges. */
  get running(): number {
    return this.#running
  }

  /** Set once `close` stopped waiting: a claim taken from then on is released at once. */
  get stopped(): boolean {
    return this.#stopped
  }

  /** Counts a delivery or dispatch in; each `start` has one {@link Claims.finish}. */
  start(): void {
    this.#running++
  }

  /** Counts a delivery or dispatch out; the last work ends {@link Claims.idle}'s waits. */
  finish(): void {
    if (--this.#running === 0 && this.#onIdle.length > 0) this.#idleNow()
  }

  /** No work left: each wait of {@link Claims.idle} ends. */
  #idleNow(): void {
    if (this.#running > 0 || this.#background > 0 || this.#onIdle.length === 0) return
    for (const resolve of this.#onIdle.splice(0)) resolve()
  }

  /** Counts in work done behind an answer already given (a done marker retried); the returned call counts it out. */
  background(): () => void {
    this.#background++
    let done = false
    return () => {
      if (done) return
      done = true
      this.#background--
      this.#idleNow()
    }
  }

  /** Whether any work is left: deliveries, dispatches (hung ones too), replays, done markers retried. */
  get busy(): boolean {
    return this.#running > 0 || this.#background > 0
  }

  /** Runs `work` (which never throws synchronously) as tracked work: counted out when its promise settles. */
  track<T>(work: () => Promise<T>): Promise<T> {
    this.#running++
    const result = work()
    result.then(this.#finish, this.#finish)
    return result
  }

  readonly #finish = () => this.finish()

  /** Tracks a run whose handlers went asynchronous, so `stop` can abort it. */
  hold(run: Run): void {
    this.#runs.set(run.eventId, run)
    this.watcher?.held(run)
  }

  /** The run's handlers settled. */
  drop(run: Run): void {
    if (this.#runs.get(run.eventId) === run) this.#runs.delete(run.eventId)
    if (this.#hung.size > 0) this.#hung.delete(run)
    this.watcher?.dropped(run)
  }

  /** The run's handlers overran `maxRunMs` at `since` and still run: hung until {@link Claims.drop}. */
  hang(run: Run, since: number): void {
    this.#hung.set(run, since)
  }

  /**
   * The run of `eventId` whose handlers still run in this process, if any. It holds its event even when its lease
   * lapsed (a renewal lost under load, a store that stopped answering): the store would then grant a new claim, and
   * the handlers would run beside themselves.
   */
  runOf(eventId: string): Run | undefined {
    return this.#runs.size === 0 ? undefined : this.#runs.get(eventId)
  }

  /** How many runs are hung now, and the oldest. */
  hung(): HungRuns {
    const first = this.#hung.entries().next()
    if (first.done) return { count: 0, oldest: null }
    const [run, since] = first.value
    return {
      count: this.#hung.size,
      oldest: { eventId: run.eventId, eventType: run.eventType, since: new Date(since) },
    }
  }

  /** How many runs are hung now (no allocation). */
  get hungCount(): number {
    return this.#hung.size
  }

  /** Resolves once no work is left ({@link Claims.busy}), or after `timeoutMs` when given, whichever comes first. */
  idle(timeoutMs?: number): Promise<void> {
    if (!this.busy) return Promise.resolve()
    return new Promise<void>((resolve) => {
      const timer = timeoutMs === undefined ? undefined : setTimeout(resolve, timeoutMs)
      this.#onIdle.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }

  /**
   * Stops: claims taken from now on are released at once; every run still holding one has its signal aborted with
   * `reason`, and keeps its claim (renewed) until its handlers settle: a run still going is never run beside itself.
   */
  stop(reason: Error): void {
    this.#stopped = true
    for (const run of this.#runs.values()) run.controller.abort(reason)
  }
}
