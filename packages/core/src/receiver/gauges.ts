import type { DeadLetters } from '../dead-letters/index.js'
import type { HealthReport } from '../health/index.js'
import { listHeldKeys, MAX_HELD_KEYS } from '../ordering/index.js'
import type { WebhookStore } from '../store.js'
import type { TelemetryGauges } from '../telemetry/telemetry.js'
import type { Engine } from './engine.js'

/** Longest a gauge read from a store (held keys, parked letters) waits, so a collection never hangs on it. */
const GAUGE_TIMEOUT_MS = 1000

/** `read()`, or undefined when it fails or has not answered within {@link GAUGE_TIMEOUT_MS}. Never rejects. */
function bounded(read: () => Promise<number | undefined>): Promise<number | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, GAUGE_TIMEOUT_MS, undefined)
  })
  return Promise.race([
    Promise.resolve()
      .then(read)
      .catch(() => undefined),
    timeout,
  ]).finally(() => clearTimeout(timer))
}

/** Deliveries and dispatches waiting for a slot: one of the receiver's, or one of their type's share. */
export function waitingOf(engine: Engine): number {
  return (engine.slots?.waiting ?? 0) + engine.bulkheads.waiting
}

/** What the receiver lets telemetry read for its gauges. */
export function gaugesOf(
  engine: Engine,
  store: WebhookStore<object>,
  deadLetters: DeadLetters,
  health: () => Promise<HealthReport>,
): TelemetryGauges {
  const { count } = deadLetters
  return {
    inFlight: () => engine.claims.running - waitingOf(engine),
    waiting: () => waitingOf(engine),
    hung: () => engine.claims.hungCount,
    overrunning: () => engine.bulkheads.overrunningCount,
    quarantined: () => engine.bulkheads.quarantinedCount,
    paused: () => (engine.pauses.active ? engine.pauses.list().map((pause) => pause.eventType) : []),
    heldKeys: () =>
      bounded(async () => (await listHeldKeys(store, { limit: MAX_HELD_KEYS, timeoutMs: GAUGE_TIMEOUT_MS }))?.length),
    ...(count ? { parkedLetters: () => bounded(() => count({ status: 'parked' })) } : {}),
    alerts: () => engine.alerts?.list() ?? [],
    // health() bounds its own wait for the stores (2 s by default).
    healthChecks: () =>
      health().then(
        (report) => report.checks,
        () => undefined,
      ),
  }
}
