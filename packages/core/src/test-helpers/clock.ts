// Shared by core's unit tests; not part of the build (tsconfig excludes it).
import { onTestFinished, vi } from 'vitest'

/**
 * Fakes the timers and the `Date` the receiver runs on, for the rest of the test: time moves only when the test
 * moves it (`vi.advanceTimersByTimeAsync`), so a loaded machine's late timers cannot change what a test of leases
 * and deadlines sees. Call it before making the store and the receiver (a memory store keeps the `Date.now` it was
 * made with). The receiver's path on Node (node:crypto, the memory store) uses no other clock.
 */
export function driveClock(): void {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] })
  onTestFinished(() => {
    vi.useRealTimers()
  })
}

/**
 * Moves the driven clock `stepMs` at a time until `promise` settles, and says how long that took on the clock
 * (a multiple of `stepMs`). Fails past `maxMs` of driven time.
 */
export async function settleOnClock<T>(
  promise: Promise<T>,
  stepMs = 5,
  maxMs = 60_000,
): Promise<{ value: T; ms: number }> {
  const started = Date.now()
  let settled: { value: T } | undefined
  let failed: { error: unknown } | undefined
  promise.then(
    (value) => {
      settled = { value }
    },
    (error: unknown) => {
      failed = { error }
    },
  )
  await vi.advanceTimersByTimeAsync(0)
  while (!settled && !failed) {
    if (Date.now() - started >= maxMs) throw new Error(`not settled within ${maxMs} ms of the driven clock`)
    await vi.advanceTimersByTimeAsync(stepMs)
  }
  if (failed) throw failed.error
  return { value: (settled as { value: T }).value, ms: Date.now() - started }
}
