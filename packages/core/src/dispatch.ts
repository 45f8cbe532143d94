import { HandlerError, StoreError } from './errors.js'
import { type EventHandler, report, runHandlers } from './event-handler/index.js'
import type { ClaimResult, WebhookStore } from './store.js'
import { isThenable } from './thenable.js'
import type { DispatchOutcome, QueuedEvent } from './types.js'

/** What dispatch needs from the receiver; `storeReady` and `initialized` track the store's one-time `init`. */
export interface DispatchState {
  readonly store: WebhookStore
  readonly leaseMs: number
  readonly eventHandler: EventHandler
  storeReady: Promise<void> | undefined
  initialized: boolean
}

/** Whether the answer already went out (deadline overrun), so a later failure says so. */
export interface Attempt {
  answered: boolean
}

/**
 * Claims the event in the store, runs its handlers, then completes the claim; when a handler fails, releases
 * the claim and throws {@link HandlerError}. Throws {@link StoreError} when the store cannot init or claim.
 * Store answers that are not promises are used without `await`.
 */
export async function dispatch(state: DispatchState, event: QueuedEvent, attempt: Attempt): Promise<DispatchOutcome> {
  const { event_id: eventId, event_type: eventType } = event
  const { store, leaseMs } = state
  let claim: ClaimResult
  try {
    if (!state.initialized) {
      state.storeReady ??= Promise.resolve(store.init?.())
      await state.storeReady
      state.initialized = true
    }
    const pending = store.claim(eventId, leaseMs)
    claim = isThenable(pending) ? await pending : pending
  } catch (cause) {
    state.storeReady = undefined // a failed init is tried again by the next delivery
    throw new StoreError(state.initialized ? 'claim' : 'init', cause, eventId, eventType)
  }
  if (claim.status === 'done') return { status: 'duplicate' }
  if (claim.status === 'processing') return { status: 'in_progress', retryAfterMs: claim.retryAfterMs }
  const token = claim.token
  const errors = await runHandlers(state.eventHandler, event)
  if (errors.length > 0) {
    try {
      const released = store.release(eventId, token)
      if (isThenable(released)) await released
    } catch (cause) {
      report(state.eventHandler, new StoreError('release', cause, eventId, eventType))
    }
    throw new HandlerError(eventId, eventType, errors, attempt.answered)
  }
  try {
    let completed = store.complete(eventId, token)
    if (isThenable(completed)) completed = await completed
    if (!completed) {
      const lost = new Error(
        `claim lost before completion (handlers outlived leaseMs ${leaseMs}); a retry may run them again`,
      )
      report(state.eventHandler, new StoreError('complete', lost, eventId, eventType))
    }
  } catch (cause) {
    // Handlers succeeded, so the event is handled: acknowledge it. A retry may run it again.
    report(state.eventHandler, new StoreError('complete', cause, eventId, eventType))
  }
  return { status: 'processed' }
}
