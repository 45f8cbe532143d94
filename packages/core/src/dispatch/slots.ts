import { BusyError } from '../errors/index.js'
import type { VerifiedEvent } from '../types.js'

/** A dispatch waiting for a slot: granted, refused as `busy`, or withdrawn. */
export interface SlotWaiter {
  /** Resolves once the slot is this dispatch's; rejects when refused, withdrawn or the receiver stops. */
  readonly granted: Promise<void>
  /**
   * Withdraws the wait (the delivery's deadline passed): it leaves the list and the promise rejects with a
   * {@link BusyError}. False when the wait was settled already (granted, refused), and nothing changes.
   */
  withdraw(): boolean
}

/**
 * A dispatch may only take a slot while its deadline leaves this many times the expected run: the estimate is an
 * average, and a run that ends after its deadline is wasted work (answered 503, so the service retries it).
 */
const RUN_MARGIN = 1.5
/** Weight of the newest run in the expected run time (EWMA). */
const RUN_WEIGHT = 0.2
/** The list is served newest first once its oldest waiter has waited this share of its deadline (CoDel's bound). */
const QUEUE_SHARE = 0.25

class Waiter implements SlotWaiter {
  readonly granted: Promise<void>
  resolve!: () => void
  reject!: (error: Error) => void
  settled = false
  prev: Waiter | undefined = undefined
  next: Waiter | undefined = undefined

  constructor(
    readonly slots: Slots,
    readonly event: VerifiedEvent,
    /** When the dispatch must be answered (`Date.now()` clock); `Infinity` without a deadline. */
    readonly due: number,
    readonly since: number,
  ) {
    this.granted = new Promise<void>((resolve, reject) => {
      this.resolve = resolve
      this.reject = reject
    })
  }

  withdraw(): boolean {
    if (this.settled) return false
    this.slots.refuse(this)
    return true
  }
}

/**
 * The receiver's `maxConcurrentEvents`: slots for dispatches (claim, handlers, done marker), taken synchronously
 * while one is free, else waited for. Counting only: no promise or timer while slots are free.
 *
 * Under overload a slot goes where its work still counts (adaptive LIFO, as CoDel bounds queue time): in arrival
 * order while the oldest waiter has waited less than a quarter of its deadline, else to the newest waiter, which
 * has the most time left. A waiter whose deadline leaves less than the expected run (a moving average of recent
 * runs) is refused `busy` at once, when it comes and whenever a slot is given back, instead of running handlers
 * whose answer would come too late. A refused or withdrawn waiter leaves the list (a doubly linked one).
 */
export class Slots {
  #free: number
  readonly #max: number
  #head: Waiter | undefined
  #tail: Waiter | undefined
  #waiting = 0
  /** Expected run time in ms (EWMA of how long recent dispatches held their slot); 0 before the first. */
  #expectedMs = 0

  /** `ofMax`: these are an event type's share of the receiver's `ofMax` slots (`bulkheads`), named in its refusals. */
  constructor(
    max: number,
    readonly ofMax?: number,
  ) {
    this.#max = max
    this.#free = max
  }

  /** How many dispatches wait for a slot now. */
  get waiting(): number {
    return this.#waiting
  }

  /** The expected run time (ms) waiters are measured against. */
  get expectedMs(): number {
    return this.#expectedMs
  }

  /** Takes a slot if one is free. */
  take(): boolean {
    if (this.#free === 0) return false
    this.#free--
    return true
  }

  /**
   * Waits for a free slot, or throws a {@link BusyError} at once when `due` (the dispatch's deadline, `Date.now()`
   * clock) leaves too little time for a run; `event` names the error.
   */
  wait(event: VerifiedEvent, due = Number.POSITIVE_INFINITY): SlotWaiter {
    const now = Date.now()
    this.#shed(now)
    if (!this.#fits(due, now)) throw this.#busy(event)
    const waiter = new Waiter(this, event, due, now)
    waiter.prev = this.#tail
    if (this.#tail) this.#tail.next = waiter
    else this.#head = waiter
    this.#tail = waiter
    this.#waiting++
    return waiter
  }

  /** Slots taken and dispatches waiting for one, for `webhooks.health()` and the telemetry. */
  usage(): { max: number; running: number; waiting: number } {
    return { max: this.#max, running: this.#max - this.#free, waiting: this.#waiting }
  }

  /** Gives a slot back after holding it `heldMs`: to a waiter that can still finish in time, else to the free ones. */
  give(heldMs?: number): void {
    if (heldMs !== undefined) {
      this.#expectedMs = this.#expectedMs === 0 ? heldMs : this.#expectedMs + RUN_WEIGHT * (heldMs - this.#expectedMs)
    }
    if (this.#head === undefined) {
      this.#free++
      return
    }
    const now = Date.now()
    this.#shed(now)
    const oldest = this.#head
    if (oldest === undefined) {
      this.#free++
      return
    }
    const waiter = now - oldest.since > (oldest.due - oldest.since) * QUEUE_SHARE ? (this.#tail as Waiter) : oldest
    this.#unlink(waiter)
    waiter.resolve()
  }

  /** Refuses `waiter` as busy: it leaves the list. */
  refuse(waiter: Waiter): void {
    this.#unlink(waiter)
    waiter.reject(this.#busy(waiter.event))
  }

  /** Rejects every dispatch still waiting with `error` (the receiver is closing). */
  stop(error: Error): void {
    while (this.#head !== undefined) {
      const waiter = this.#head
      this.#unlink(waiter)
      waiter.reject(error)
    }
  }

  #fits(due: number, now: number): boolean {
    return due - now >= this.#expectedMs * RUN_MARGIN
  }

  /**
   * Refuses the oldest waiters that can no longer finish in time, up to the first that can and has a deadline:
   * deliveries share one `deadlineMs`, so arrival order is deadline order (a queue worker's dispatch has none).
   */
  #shed(now: number): void {
    let waiter = this.#head
    while (waiter !== undefined) {
      const next = waiter.next
      if (!this.#fits(waiter.due, now)) this.refuse(waiter)
      else if (waiter.due !== Number.POSITIVE_INFINITY) return
      waiter = next
    }
  }

  #unlink(waiter: Waiter): void {
    waiter.settled = true
    const { prev, next } = waiter
    if (prev) prev.next = next
    else this.#head = next
    if (next) next.prev = prev
    else this.#tail = prev
    waiter.prev = waiter.next = undefined
    this.#waiting--
  }

  #busy(event: VerifiedEvent): BusyError {
    return this.ofMax === undefined
      ? new BusyError(this.#max, event.event_id, event.event_type)
      : new BusyError(this.ofMax, event.event_id, event.event_type, this.#max)
  }
}
