import { StoreError } from '../errors/index.js'
import { type EventHandler, report } from '../event-handler/index.js'
import type { OrderingTable } from '../ordering/index.js'
import type { WebhookStore } from '../store.js'
import type { StoreOperation, TelemetryScope } from '../telemetry/telemetry.js'
import type { VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { Claims, Run } from './claims.js'

/** What dispatch needs from the receiver; `storeReady` and `initialized` track the store's one-time `init`. */
export interface DispatchState {
  readonly store: WebhookStore<object>
  readonly leaseMs: number
  /** The longest a run's handlers may hold its claim (`Infinity`: no limit). */
  readonly maxRunMs: number
  readonly eventHandler: EventHandler
  storeReady: Promise<void> | undefined
  initialized: boolean
  /** The receiver's tracked work: runs holding a claim, and whether `close` stopped waiting. */
  readonly claims: Claims
  /** Ordering rules by event type (ordering fences), when the receiver declared some. */
  readonly ordering?: OrderingTable | undefined
}

/**
 * A store call, through the telemetry scope when there is one (which returns what the call returns). The calls made
 * on every delivery (claim, complete, release) spell the same choice out, so no closure is made without a scope.
 */
export function storeCall<T>(scope: TelemetryScope | undefined, operation: StoreOperation, call: () => T): T {
  return scope ? scope.store(operation, call) : call()
}

/** The store's one-time `init`, tried again by the next call after a failure ({@link StoreError}). */
export async function initStore(state: DispatchState, event: VerifiedEvent, scope?: TelemetryScope): Promise<void> {
  try {
    state.storeReady ??= Promise.resolve(storeCall(scope, 'init', () => state.store.init?.()))
    await state.storeReady
    state.initialized = true
  } catch (cause) {
    state.storeReady = undefined
    throw new StoreError('init', cause, event.event_id, event.event_type)
  }
}

/**
 * Releases the run's claim: `undefined` when the store answered synchronously, else a promise that never rejects.
 * A failure is reported (the lease then ends on its own).
 */
export function releaseClaim(
  state: { readonly store: WebhookStore<object>; readonly eventHandler: EventHandler },
  run: Run,
  scope?: TelemetryScope,
): Promise<void> | undefined {
  const failed = (cause: unknown) => {
    report(state.eventHandler, new StoreError('release', cause, run.eventId, run.eventType))
  }
  try {
    const released = scope
      ? scope.store('release', () => state.store.release(run.eventId, run.token))
      : state.store.release(run.eventId, run.token)
    if (isThenable(released)) return Promise.resolve(released).then(() => undefined, failed)
  } catch (cause) {
    failed(cause)
  }
  return undefined
}
