// Helpers of the sandbox's own tests (not built): sandboxes and receivers closed after each test, and reads of what
// they delivered. A file using them calls afterEach(closeAll).
import { expect } from 'vitest'
import { createManualClock } from './clock.js'
import type { SandboxOptions } from './options.js'
import { createSandbox } from './server.js'
import { type Receiver, startReceiver } from './test-receivers.js'
import type { Sandbox, SandboxDelivery } from './types.js'

export const HOUR = 3_600_000
export const START = Date.parse('2026-11-02T15:00:00Z')

/** What the current test opened, closed by {@link closeAll} in reverse order. */
export const cleanup: (() => Promise<void>)[] = []

export async function closeAll(): Promise<void> {
  for (const close of cleanup.splice(0).reverse()) await close()
}

/** A sandbox on a manual clock at {@link START} (unless `options` gives a clock), closed after the test. */
export function sandboxOf(options: SandboxOptions = {}): Sandbox {
  const sandbox = createSandbox({ clock: createManualClock({ start: START }), ...options })
  cleanup.push(() => sandbox.close())
  return sandbox
}

/** A receiver on 127.0.0.1 (see startReceiver), closed after the test. */
export async function receiverOf(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const receiver = await startReceiver(...args)
  cleanup.push(() => receiver.close())
  return receiver
}

/** The one item of `list`, failing the test when it holds another number. */
export const only = <T>(list: readonly T[]): T => {
  expect(list).toHaveLength(1)
  return list[0] as T
}

/** Offsets from the first send, in hours, of a delivery's scheduled attempts. */
export const scheduledHours = (delivery: SandboxDelivery) =>
  delivery.attempts.filter((a) => a.kind === 'scheduled').map((a) => (a.time - delivery.firstAttemptTime) / HOUR)
