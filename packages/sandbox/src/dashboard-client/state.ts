import type { DashboardClock, DashboardSubscription, SandboxLogEntry } from '../types.js'

/** What the page knows, shared by its modules: the log, the subscriptions, the clock and the token. */
export const state = {
  entries: new Map<string, SandboxLogEntry>(),
  /** Events whose card the user folded (older ones start folded). */
  closed: new Set<string>(),
  /** Events whose signed payload is unfolded. */
  openPayloads: new Set<string>(),
  subscriptions: [] as DashboardSubscription[],
  clock: { now: Date.now(), manual: false } as DashboardClock,
  /** When the clock was received, in `performance.now()` time: a real clock runs on from there. */
  clockReceived: performance.now(),
  /** Event types the sandbox has samples of. */
  sampleTypes: [] as string[],
  /** True once the first `hello` arrived. */
  greeted: false,
  token: null as string | null,
  source: undefined as EventSource | undefined,
}

/** The sandbox's time now: a manual clock's as received, a real clock's run on since. */
export const now = () =>
  state.clock.manual ? state.clock.now : state.clock.now + (performance.now() - state.clockReceived)
