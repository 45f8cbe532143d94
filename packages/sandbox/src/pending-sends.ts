import type { Clock, ClockTimer } from './clock.js'

/** The sends a delivery engine has running, and its chaos-delayed sends not yet done, for `idle()` and `close()`. */
export class PendingSends {
  private readonly inflight = new Set<Promise<unknown>>()
  /** Chaos-delayed sends not yet done: `idle()` waits for them on a real clock. */
  private readonly soon = new Set<ClockTimer>()
  private waiters: (() => void)[] = []

  constructor(private readonly clock: Clock) {}

  /** `work`, tracked until it settles. */
  track(work: Promise<void>): Promise<void> {
    this.inflight.add(work)
    return work.finally(() => this.inflight.delete(work))
  }

  /** Resolves once no send is running and, when `waitForChaos`, no chaos-delayed send is waiting. */
  async idle(waitForChaos: boolean): Promise<void> {
    // Bounded: each round waits for a send or a chaos timer to finish; new work only comes from emits.
    while (this.inflight.size > 0 || (waitForChaos && this.soon.size > 0)) {
      const waits: Promise<unknown>[] = []
      if (this.inflight.size > 0) waits.push(Promise.allSettled([...this.inflight]))
      if (waitForChaos && this.soon.size > 0) waits.push(new Promise<void>((resolve) => this.waiters.push(resolve)))
      await Promise.race(waits)
    }
  }

  /** Cancels every chaos-delayed send not yet done. */
  cancelSoon(): void {
    for (const timer of [...this.soon]) timer.cancel()
  }

  /** Resolves once the running sends settled, then wakes whoever waits in `idle()`. */
  async settle(): Promise<void> {
    await Promise.allSettled([...this.inflight])
    this.wake()
  }

  private wake(): void {
    for (const resolve of this.waiters.splice(0)) resolve()
  }

  /** A clock timer for a chaos-delayed send, tracked so `idle()` can wait for it. */
  soonTimer(callback: () => Promise<void>, delayMs: number): ClockTimer {
    const timer: ClockTimer = {
      cancel: () => {
        inner.cancel()
        if (this.soon.delete(timer)) this.wake()
      },
    }
    const inner = this.clock.setTimeout(async () => {
      try {
        await callback()
      } finally {
        this.soon.delete(timer)
        this.wake()
      }
    }, delayMs)
    this.soon.add(timer)
    return timer
  }
}
