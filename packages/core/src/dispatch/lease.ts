import { HandlerTimeoutError, StoreError } from '../errors/index.js'
import { type EventHandler, report } from '../event-handler/index.js'
import type { WebhookStore } from '../store.js'
import { isThenable } from '../util/thenable.js'
import type { Attempt } from './attempt.js'
import type { Claims, Run } from './claims.js'
import { storeCall } from './store-calls.js'

/** Stops renewing a claim; idempotent. */
export interface Lease {
  stop(): void
}

/**
 * Renews the run's claim every third of the lease while its handlers run (one renewal in flight at a time).
 * When the claim is lost, renewal keeps failing until the lease would run out before the next try, or a
 * renewal hangs until the lease has a sixth left, the handlers' signal is aborted with the {@link StoreError}
 * (also reported). A store without `extend` cannot renew: the signal is aborted when the lease runs out.
 *
 * `maxRunMs` after the claim, handlers still running are told to stop: the signal is aborted with a
 * {@link HandlerTimeoutError}, which is reported, and the run counts as hung ({@link Claims.hang}) until it settles.
 * Renewal goes on: a handler that ignores its signal still runs, so its claim, ordering key and slot stay held (a
 * retry meanwhile is answered 409); only the end of the process lets the lease run out.
 */
export function holdLease(
  state: {
    readonly store: WebhookStore<object>
    readonly leaseMs: number
    readonly maxRunMs: number
    readonly eventHandler: EventHandler
    readonly claims: Claims
  },
  run: Run,
  claimedAt: number,
  attempt: Attempt,
): Lease {
  const { store, leaseMs, maxRunMs, eventHandler } = state
  const { eventId, eventType, token, controller } = run
  const scope = attempt.scope
  let timer: ReturnType<typeof setTimeout> | undefined
  let watchdog: ReturnType<typeof setTimeout> | undefined
  let limit: ReturnType<typeof setTimeout> | undefined
  // `stopped`: renewal ended (the claim lost, or the run over); `ended`: the dispatch stopped the lease.
  let stopped = false
  let ended = false
  const stop = () => {
    stopped = true
    ended = true
    if (timer !== undefined) clearTimeout(timer)
    if (watchdog !== undefined) clearTimeout(watchdog)
    if (limit !== undefined) clearTimeout(limit)
    timer = watchdog = limit = undefined
  }
  if (maxRunMs !== Number.POSITIVE_INFINITY) {
    limit = setTimeout(
      () => {
        limit = undefined
        if (ended) return
        const error = new HandlerTimeoutError(maxRunMs, eventId, eventType, attempt.answered)
        attempt.hung = true
        // When it overran, not now: a timer may fire a millisecond before Date.now() reaches its time.
        state.claims.hang(run, claimedAt + maxRunMs)
        controller.abort(error)
        report(eventHandler, error)
      },
      claimedAt + maxRunMs - Date.now(),
    )
    limit.unref?.()
  }
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
  return { stop }
}
