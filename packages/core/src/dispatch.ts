import { ClosingError, EventConflictError, HandlerError, InternalError, StoreError, WebhookError } from './errors.js'
import { type EventHandler, report, runHandlers } from './event-handler/index.js'
// ordering fences (issue 24)
import {
  claimPosition,
  type Ordering,
  type OrderingMark,
  type OrderingPosition,
  type OrderingTable,
  orderingOf,
} from './ordering/index.js'
import type { VerifiedSecret } from './secrets.js'
import type { ClaimResult, TransactionOutcome, WebhookStore } from './store.js'
import type { StoreOperation, TelemetryScope } from './telemetry.js'
import { isThenable } from './thenable.js'
import { isTransactionAborted } from './transaction-aborted.js'
import type { DispatchOutcome, HandlerContext, QueuedEvent } from './types.js'

/** A dispatch that holds an event's claim while its handlers run. */
export interface Run {
  readonly eventId: string
  readonly eventType: string
  readonly token: string
  /** Aborts the handlers' `context.signal`. */
  readonly controller: LazyAbortController
}

/**
 * An `AbortController` made only when a handler reads `context.signal`: most handlers never do, and making one
 * costs a few microseconds per delivery. Aborted before that, the signal is born aborted with the same reason.
 */
export class LazyAbortController {
  #controller: AbortController | undefined
  #aborted = false
  #reason: unknown

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  abort(reason?: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
  }
}

/** Where a store's context object keeps its controller, for the shared `signal` getter. */
const CONTROLLER = Symbol('payhooks.controller')

/**
 * `signal` as an own, enumerable accessor whose getter is one shared function. An object literal with its own
 * `get signal()` made a new closure, hence a new hidden class, per delivery: V8 keeps those maps in old space, so
 * every delivery's context and what it reached survived young-generation GC (profiling under HTTP load put the
 * scavenges and mark-compacts this caused at about 10 µs per delivery).
 */
const SIGNAL: PropertyDescriptor = {
  get(this: { [CONTROLLER]: LazyAbortController }) {
    return this[CONTROLLER].signal
  },
  enumerable: true,
  configurable: true,
}

/**
 * The handlers' context when the store adds none: `{ signal, verifiedWith }`, the signal made when first read.
 * `verifiedWith` is always assigned (`undefined` for a queue worker's dispatch), so every context has one shape.
 */
class SignalContext {
  readonly [CONTROLLER]: LazyAbortController
  readonly verifiedWith: VerifiedSecret | undefined
  readonly ordering: Ordering | undefined
  constructor(controller: LazyAbortController, verifiedWith: VerifiedSecret | undefined, ordering?: Ordering) {
    this[CONTROLLER] = controller
    Object.defineProperty(this, 'signal', SIGNAL)
    this.verifiedWith = verifiedWith
    this.ordering = ordering
  }
}

/** The store's context with `signal` (made when first read) and `verifiedWith` added. */
function withSignal<C extends object>(
  context: C,
  controller: LazyAbortController,
  verifiedWith: VerifiedSecret | undefined,
  ordering?: Ordering,
): C & { signal: AbortSignal } {
  Object.defineProperty(context, CONTROLLER, { value: controller })
  Object.defineProperty(context, 'verifiedWith', { value: verifiedWith, enumerable: true })
  Object.defineProperty(context, 'ordering', { value: ordering, enumerable: true })
  return Object.defineProperty(context, 'signal', SIGNAL) as C & { signal: AbortSignal }
}

/** What dispatch needs from the receiver; `storeReady` and `initialized` track the store's one-time `init`. */
export interface DispatchState {
  readonly store: WebhookStore<object>
  readonly leaseMs: number
  readonly eventHandler: EventHandler
  storeReady: Promise<void> | undefined
  initialized: boolean
  /** Dispatches holding a claim now: `close` aborts and releases them when its timeout passes. */
  readonly runs: Set<Run>
  /** Set once `close` stopped waiting: a claim taken from then on is released at once. */
  stopped: boolean
  /** Ordering rules by event type (issue 24), when the receiver declared some. */
  readonly ordering?: OrderingTable | undefined
}

/** Whether the answer already went out (deadline overrun), so a later failure says so; and who observes it. */
export interface Attempt {
  answered: boolean
  /** Telemetry of this delivery or dispatch: store calls and handlers run through it. */
  scope?: TelemetryScope | undefined
  /** Digest of the body the event came in (none for a queue worker's event): claimed with, and checked against. */
  digest?: string | undefined
  /** Which secret verified the event, for the handlers' context; undefined for a queue worker's dispatch. */
  verifiedWith?: VerifiedSecret | undefined
}

/** Stops renewing a claim; idempotent. */
interface Lease {
  stop(): void
}

/**
 * Claims the event in the store, runs its handlers (renewing the claim meanwhile), then completes the claim, or
 * lets the store commit the handlers' writes with the done marker when it has `transaction`; when a handler
 * fails, releases the claim and throws {@link HandlerError}. Throws {@link StoreError} when the store cannot
 * init or claim (or its transaction fails or loses the claim).
 *
 * Synchronous as long as everything it calls is: a store answering with values (the memory store) and handlers
 * returning no promise give the outcome itself, with no promise, timer or `runs` entry made (profiling showed
 * those at about a fifth of `receive()`'s own time). The first promise an answer carries switches to the
 * asynchronous path; it may also throw synchronously.
 */
export function dispatch(
  state: DispatchState,
  event: QueuedEvent,
  attempt: Attempt,
): DispatchOutcome | Promise<DispatchOutcome> {
  const { event_id: eventId, event_type: eventType } = event
  const { store, leaseMs } = state
  if (!state.initialized || store.transaction) return dispatchAsync(state, event, attempt)
  const scope = attempt.scope
  const position = claimPosition(state.ordering, event, attempt.answered)
  let claim: ClaimResult | PromiseLike<ClaimResult>
  const claimedAt = Date.now()
  try {
    const digest = attempt.digest
    claim = scope
      ? scope.store('claim', () => store.claim(eventId, leaseMs, digest, position))
      : store.claim(eventId, leaseMs, digest, position)
  } catch (cause) {
    throw new StoreError('claim', cause, eventId, eventType)
  }
  if (isThenable(claim)) {
    return Promise.resolve(claim).then(
      (claimed) => afterClaim(state, event, attempt, claimed, claimedAt, position),
      (cause: unknown) => {
        throw new StoreError('claim', cause, eventId, eventType)
      },
    )
  }
  return afterClaim(state, event, attempt, claim, claimedAt, position)
}

/**
 * A store call, through the telemetry scope when there is one (which returns what the call returns). The calls made
 * on every delivery (claim, complete, release) spell the same choice out, so no closure is made without a scope.
 */
export function storeCall<T>(scope: TelemetryScope | undefined, operation: StoreOperation, call: () => T): T {
  return scope ? scope.store(operation, call) : call()
}

/**
 * The outcome when the claim is not this delivery's (reporting a copy whose body differs from the one handled),
 * else the run that now holds it.
 */
function runOf(state: DispatchState, event: QueuedEvent, attempt: Attempt, claim: ClaimResult): DispatchOutcome | Run {
  if (claim.status !== 'claimed') {
    const { digest: handled } = claim
    const received = attempt.digest
    const inProgress = claim.status === 'processing'
    if (handled !== undefined && received !== undefined && handled !== received) {
      const conflict = new EventConflictError(event.event_id, event.event_type, received, handled, inProgress)
      attempt.scope?.conflict?.(conflict)
      report(state.eventHandler, conflict)
    }
    return inProgress ? { status: 'in_progress', retryAfterMs: claim.retryAfterMs } : { status: 'duplicate' }
  }
  return {
    eventId: event.event_id,
    eventType: event.event_type,
    token: claim.token,
    controller: new LazyAbortController(),
  }
}

function afterClaim(
  state: DispatchState,
  event: QueuedEvent,
  attempt: Attempt,
  claim: ClaimResult,
  claimedAt: number,
  position: OrderingPosition | undefined,
): DispatchOutcome | Promise<DispatchOutcome> {
  const run = runOf(state, event, attempt, claim)
  if ('status' in run) return run
  const scope = attempt.scope
  if (state.stopped) return stopped(state, run, scope)
  const ordering = position && orderingOf(position, run.eventId, (claim as { newest?: OrderingMark }).newest)
  const context = new SignalContext(run.controller, attempt.verifiedWith, ordering) as unknown as HandlerContext
  const errors = runHandlers(state.eventHandler, event, context, scope)
  if (!isThenable(errors)) return complete(state, run, attempt, errors)
  // The handlers went asynchronous: from now on the claim needs renewing, and `close` may have to abort them.
  state.runs.add(run)
  const lease = holdLease(state, run, claimedAt, scope)
  return errors.then(
    (failures) => {
      lease.stop()
      state.runs.delete(run)
      return complete(state, run, attempt, failures)
    },
    (error: unknown) => {
      lease.stop()
      state.runs.delete(run)
      throw error
    },
  )
}

async function stopped(state: DispatchState, run: Run, scope: TelemetryScope | undefined): Promise<never> {
  await releaseClaim(state, run, scope)
  throw new ClosingError()
}

/**
 * After the handlers ran: on failure releases the claim and throws {@link HandlerError}, else marks the event done
 * (a store failure then is reported, not thrown: the handlers succeeded).
 */
function complete(
  state: DispatchState,
  run: Run,
  attempt: Attempt,
  errors: unknown[],
): DispatchOutcome | Promise<DispatchOutcome> {
  const { eventId, eventType, token } = run
  const scope = attempt.scope
  if (errors.length > 0) {
    const failed = () => {
      throw new HandlerError(eventId, eventType, errors, attempt.answered)
    }
    const released = releaseClaim(state, run, scope)
    return released === undefined ? failed() : released.then(failed)
  }
  let completed: boolean | PromiseLike<boolean>
  try {
    completed = scope
      ? scope.store('complete', () => state.store.complete(eventId, token))
      : state.store.complete(eventId, token)
  } catch (cause) {
    completeFailed(state, run, cause)
    return { status: 'processed' }
  }
  if (!isThenable(completed)) {
    if (!completed) claimLost(state, run)
    return { status: 'processed' }
  }
  return Promise.resolve(completed).then(
    (done) => {
      if (!done) claimLost(state, run)
      return { status: 'processed' }
    },
    (cause: unknown) => {
      completeFailed(state, run, cause)
      return { status: 'processed' }
    },
  )
}

function claimLost(state: DispatchState, run: Run): void {
  const lost = new Error(
    'claim lost before completion (its renewal failed, or close() released it); a retry may run the handlers again',
  )
  report(state.eventHandler, new StoreError('complete', lost, run.eventId, run.eventType))
}

/** Handlers succeeded, so the event is handled: it is acknowledged anyway, and a retry may run it again. */
function completeFailed(state: DispatchState, run: Run, cause: unknown): void {
  report(state.eventHandler, new StoreError('complete', cause, run.eventId, run.eventType))
}

/** The store's one-time `init`, tried again by the next call after a failure ({@link StoreError}). */
export async function initStore(state: DispatchState, event: QueuedEvent, scope?: TelemetryScope): Promise<void> {
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
 * The store's one-time `init` (tried again by the next delivery after a failure), then {@link dispatch}; or, for a
 * store with transactions, the claim and the handlers inside its transaction.
 */
async function dispatchAsync(state: DispatchState, event: QueuedEvent, attempt: Attempt): Promise<DispatchOutcome> {
  const { event_id: eventId, event_type: eventType } = event
  const { store, leaseMs } = state
  const scope = attempt.scope
  if (!state.initialized) await initStore(state, event, scope)
  if (!store.transaction) return dispatch(state, event, attempt)
  const position = claimPosition(state.ordering, event, attempt.answered)
  let claim: ClaimResult
  const claimedAt = Date.now()
  try {
    claim = await storeCall(scope, 'claim', () => store.claim(eventId, leaseMs, attempt.digest, position))
  } catch (cause) {
    throw new StoreError('claim', cause, eventId, eventType)
  }
  const run = runOf(state, event, attempt, claim)
  if ('status' in run) return run
  if (state.stopped) return stopped(state, run, scope)
  const ordering = position && orderingOf(position, eventId, (claim as { newest?: OrderingMark }).newest)
  state.runs.add(run)
  const lease = holdLease(state, run, claimedAt, scope)
  try {
    return await runInTransaction(state, event, run, lease, attempt, ordering)
  } finally {
    lease.stop()
    state.runs.delete(run)
  }
}

/** The store runs the handlers inside its transaction and commits the done marker with their writes. */
async function runInTransaction(
  state: DispatchState,
  event: QueuedEvent,
  run: Run,
  lease: Lease,
  attempt: Attempt,
  ordering?: Ordering,
): Promise<DispatchOutcome> {
  const { eventId, eventType, token } = run
  const scope = attempt.scope
  let errors: unknown[] | undefined
  let outcome: TransactionOutcome
  const work = async (context: object) => {
    errors = await runHandlers(
      state.eventHandler,
      event,
      withSignal(context, run.controller, attempt.verifiedWith, ordering),
      scope,
    )
    // The marker is written next, in the transaction: renewing now would only wait on its row lock.
    lease.stop()
    return errors.length === 0
  }
  try {
    outcome = await storeCall(scope, 'transaction', () => state.store.transaction!(eventId, token, work))
  } catch (cause) {
    // Rolled back, or the commit's outcome is unknown: releasing never touches a done marker, so either way
    // the retry finds the truth.
    lease.stop()
    await releaseClaim(state, run, scope)
    // The handlers left the transaction unable to commit: their failure, whatever they resolved.
    if (isTransactionAborted(cause)) throw new HandlerError(eventId, eventType, [cause], attempt.answered)
    // The store failed (its connection lost, say), even when a handler failed with it: 503, as for any store
    // failure, since a handler's error is then most likely that same lost connection.
    throw new StoreError('transaction', cause, eventId, eventType)
  }
  if (outcome === 'committed') return { status: 'processed' }
  if (outcome === 'rolled_back') {
    await releaseClaim(state, run, scope)
    throw new HandlerError(eventId, eventType, errors ?? [], attempt.answered)
  }
  const lost = new Error(
    "claim lost before commit (its renewal failed, or close() released it); the handlers' writes were rolled back and a retry runs them again",
  )
  throw new StoreError('complete', lost, eventId, eventType)
}

/** Ends a dispatch's telemetry scope with what the dispatch resolved or rejected with. */
export function observeDispatch(scope: TelemetryScope, result: Promise<DispatchOutcome>, event: QueuedEvent): void {
  result.then(
    (done) => scope.end({ outcome: done.status }),
    (error: unknown) => {
      const failure = error instanceof WebhookError ? error : new InternalError(error, event)
      scope.end({ outcome: failure.code, error: failure })
    },
  )
}

/**
 * Releases the run's claim: `undefined` when the store answered synchronously, else a promise that never rejects.
 * A failure is reported (the lease then ends on its own).
 */
export function releaseClaim(state: DispatchState, run: Run, scope?: TelemetryScope): Promise<void> | undefined {
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

/**
 * Renews the run's claim every third of the lease while its handlers run (one renewal in flight at a time).
 * When the claim is lost, renewal keeps failing until the lease would run out before the next try, or a
 * renewal hangs until the lease has a sixth left, the handlers' signal is aborted with the {@link StoreError}
 * (also reported). A store without `extend` cannot renew: the signal is aborted when the lease runs out.
 */
function holdLease(state: DispatchState, run: Run, claimedAt: number, scope: TelemetryScope | undefined): Lease {
  const { store, leaseMs, eventHandler } = state
  const { eventId, eventType, token, controller } = run
  let timer: ReturnType<typeof setTimeout> | undefined
  let watchdog: ReturnType<typeof setTimeout> | undefined
  let stopped = false
  const schedule = (delay: number, callback: () => void) => {
    timer = setTimeout(callback, delay)
    timer.unref?.()
  }
  const watch = (until: number, cause: string) => {
    if (watchdog !== undefined) clearTimeout(watchdog)
    watchdog = setTimeout(() => lose(new Error(cause)), until - Date.now())
    watchdog.unref?.()
  }
  const lose = (cause: unknown) => {
    if (stopped) return
    stopped = true
    const error = new StoreError('extend', cause, eventId, eventType)
    report(eventHandler, error)
    controller.abort(error)
  }
  const extend = store.extend?.bind(store)
  if (!extend) {
    watch(claimedAt + leaseMs, `lease of ${leaseMs} ms ran out and the store has no extend() to renew it`)
  } else {
    const interval = leaseMs / 3
    const unanswered = 'renewal got no answer before the lease was nearly over'
    let heldUntil = claimedAt + leaseMs
    // The watchdog only matters while a renewal is under way, so most deliveries (done within a third of the
    // lease) never arm it: one timer fewer per delivery.
    const renew = async () => {
      timer = undefined
      watch(heldUntil - interval / 2, unanswered)
      const startedAt = Date.now()
      try {
        let renewed = storeCall(scope, 'extend', () => extend(eventId, token, leaseMs))
        if (isThenable(renewed)) renewed = await renewed
        if (stopped) return
        if (!renewed) return lose(new Error('claim lost: its lease ran out and another delivery took it'))
        heldUntil = startedAt + leaseMs
        watch(heldUntil - interval / 2, unanswered)
      } catch (cause) {
        if (stopped) return
        // A store failing once may answer next time, as long as the lease still runs then.
        if (Date.now() + interval >= heldUntil) return lose(cause)
        report(eventHandler, new StoreError('extend', cause, eventId, eventType))
      }
      if (!stopped) schedule(interval, renew)
    }
    schedule(interval, renew)
  }
  return {
    stop() {
      stopped = true
      if (timer !== undefined) clearTimeout(timer)
      if (watchdog !== undefined) clearTimeout(watchdog)
      timer = undefined
      watchdog = undefined
    },
  }
}
