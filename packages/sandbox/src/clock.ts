/** A timer scheduled through a {@link Clock}. */
export interface ClockTimer {
  /** Stops the timer; a no-op once it ran. */
  cancel(): void
}

/**
 * Time as the sandbox sees it: the current time and timers. Swap in {@link createManualClock} to
 * play hours of retries in milliseconds.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number
  /**
   * Runs `callback` once `delayMs` have passed. The callback may return a promise: a manual clock
   * waits for it before moving on.
   */
  setTimeout(callback: () => unknown, delayMs: number): ClockTimer
}

/** A clock that only moves when told to. */
export interface ManualClock extends Clock {
  /**
   * Moves time forward by `ms`, running every timer due up to then in time order. Timers due at the
   * same instant run concurrently; the next instant starts once their promises settled. Timers they
   * schedule within the window run too. Rejects with the first error a timer threw.
   */
  advance(ms: number): Promise<void>
  /** Timers scheduled and not yet run. */
  readonly pending: number
}

/** Longest delay `setTimeout` accepts (about 24.8 days). */
const MAX_DELAY = 2 ** 31 - 1

/**
 * The wall clock: `Date.now()` and Node timers. Timers are unref'd, so pending retries never keep a
 * process alive on their own.
 *
 * @example
 * const sandbox = createSandbox({ clock: realClock }) // the default
 */
export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, delayMs) {
    if (!(delayMs <= MAX_DELAY)) throw new RangeError(`realClock: delay ${delayMs} ms is too long`)
    const handle = setTimeout(() => void callback(), Math.max(0, delayMs))
    handle.unref?.()
    return { cancel: () => clearTimeout(handle) }
  },
}

/** Options of {@link createManualClock}. */
export interface ManualClockOptions {
  /**
   * Start time, as epoch milliseconds or a Date.
   * @default Date.now() when the clock is created
   */
  start?: number | Date
  /**
   * Most timers one `advance` may run before it gives up, a guard against timers that keep
   * rescheduling themselves at the same instant.
   * @default 1_000_000
   */
  maxTimersPerAdvance?: number
}

interface ManualTimer {
  at: number
  callback: () => unknown
  cancelled: boolean
}

/**
 * A clock that moves only through `advance`, for tests.
 *
 * @example
 * const clock = createManualClock({ start: Date.parse('2026-11-02T15:00:00Z') })
 * const sandbox = createSandbox({ clock })
 * await clock.advance(72 * 60 * 60 * 1000) // runs 72 hours of retries
 */
export function createManualClock(options: ManualClockOptions = {}): ManualClock {
  let now = options.start === undefined ? Date.now() : Number(options.start)
  if (!Number.isFinite(now)) throw new TypeError('createManualClock: start must be a finite time')
  const maxTimers = options.maxTimersPerAdvance ?? 1_000_000
  // Sorted by time, then scheduling order; cancelled timers are dropped when they reach the front.
  const timers: ManualTimer[] = []
  // Serializes concurrent advance() calls so time only moves forward, one window at a time.
  let running: Promise<void> = Promise.resolve()

  const insert = (timer: ManualTimer) => {
    let lo = 0
    let hi = timers.length
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if ((timers[mid] as ManualTimer).at <= timer.at) lo = mid + 1
      else hi = mid
    }
    timers.splice(lo, 0, timer)
  }

  async function run(target: number): Promise<void> {
    let ran = 0
    for (;;) {
      while (timers[0]?.cancelled) timers.shift()
      const first = timers[0]
      if (!first || first.at > target) break
      const at = first.at
      now = Math.max(now, at)
      let count = 0
      while (count < timers.length && (timers[count] as ManualTimer).at === at) count++
      const due = timers.splice(0, count).filter((t) => !t.cancelled)
      ran += due.length
      if (ran > maxTimers) throw new Error(`ManualClock.advance: more than ${maxTimers} timers in one advance`)
      const results = await Promise.allSettled(due.map(async (t) => t.callback()))
      const failed = results.find((r) => r.status === 'rejected')
      if (failed) throw failed.reason
    }
    now = Math.max(now, target)
  }

  return {
    now: () => now,
    setTimeout(callback, delayMs) {
      const timer: ManualTimer = { at: now + Math.max(0, delayMs), callback, cancelled: false }
      insert(timer)
      return {
        cancel: () => {
          timer.cancelled = true
        },
      }
    },
    advance(ms) {
      if (!(ms >= 0) || !Number.isFinite(ms)) {
        return Promise.reject(new RangeError('ManualClock.advance: ms must be a finite number >= 0'))
      }
      const result = running.then(() => run(now + ms))
      running = result.catch(() => {})
      return result
    },
    get pending() {
      return timers.filter((t) => !t.cancelled).length
    },
  }
}

/**
 * Whether `clock` can be advanced by hand.
 *
 * @example
 * if (isManualClock(sandbox.clock)) await sandbox.clock.advance(60_000)
 */
export function isManualClock(clock: Clock): clock is ManualClock {
  return typeof (clock as Partial<ManualClock>).advance === 'function'
}
