import { BusyError } from '../errors.js'
import type { VerifiedEvent } from '../types.js'

/** A dispatch waiting for a slot: granted in arrival order, or withdrawn. */
export interface SlotWaiter {
  /** Resolves once the slot is this dispatch's; rejects when withdrawn or the receiver stops. */
  readonly granted: Promise<void>
  /**
   * Withdraws the wait (the delivery's deadline passed): the promise rejects with a {@link BusyError}. False when
   * the slot was granted already, and the dispatch goes on.
   */
  withdraw(): boolean
}

interface Waiter {
  resolve(): void
  reject(error: Error): void
  settled: boolean
}

/**
 * The receiver's `maxConcurrentEvents`: slots for dispatches (claim, handlers, done marker), taken synchronously
 * while one is free, else waited for in arrival order. Counting only: no promise or timer while slots are free.
 */
export class Slots {
  #free: number
  readonly #waiters: Waiter[] = []
  #head = 0
  readonly #max: number

  constructor(max: number) {
    this.#max = max
    this.#free = max
  }

  /** Takes a slot if one is free. */
  take(): boolean {
    if (this.#free === 0) return false
    this.#free--
    return true
  }

  /** Waits for the next free slot, after those already waiting; `event` names the {@link BusyError} of a withdrawal. */
  wait(event: VerifiedEvent): SlotWaiter {
    let waiter!: Waiter
    const granted = new Promise<void>((resolve, reject) => {
      waiter = { resolve, reject, settled: false }
    })
    this.#waiters.push(waiter)
    const max = this.#max
    return {
      granted,
      withdraw() {
        if (waiter.settled) return false
        waiter.settled = true
        waiter.reject(new BusyError(max, event.event_id, event.event_type))
        return true
      },
    }
  }

  /** Slots taken and dispatches waiting for one, for `webhooks.health()` and the telemetry. */
  usage(): { max: number; running: number; waiting: number } {
    let waiting = 0
    for (let i = this.#head; i < this.#waiters.length; i++) if (!(this.#waiters[i] as Waiter).settled) waiting++
    return { max: this.#max, running: this.#max - this.#free, waiting }
  }

  /** Gives a slot back: to the first dispatch still waiting, else to the free ones. */
  give(): void {
    while (this.#head < this.#waiters.length) {
      const waiter = this.#waiters[this.#head++] as Waiter
      if (waiter.settled) continue
      waiter.settled = true
      this.#compact()
      waiter.resolve()
      return
    }
    this.#compact()
    this.#free++
  }

  /** Rejects every dispatch still waiting with `error` (the receiver is closing). */
  stop(error: Error): void {
    for (let i = this.#head; i < this.#waiters.length; i++) {
      const waiter = this.#waiters[i] as Waiter
      if (waiter.settled) continue
      waiter.settled = true
      waiter.reject(error)
    }
    this.#waiters.length = 0
    this.#head = 0
  }

  #compact() {
    if (this.#head === this.#waiters.length) {
      this.#waiters.length = 0
      this.#head = 0
    } else if (this.#head > 1024 && this.#head * 2 > this.#waiters.length) {
      this.#waiters.splice(0, this.#head)
      this.#head = 0
    }
  }
}
