import { StoreError } from '../errors/index.js'
import { type EventHandler, report, warn } from '../event-handler/index.js'
import type { WebhookStore } from '../store.js'
import type { Claims, Run } from './claims.js'

/**
 * Waits before the first background retries of a done marker that failed after the handlers succeeded; later ones
 * wait as long as the last. None waits more than a third of the lease: each failed try renews the claim.
 */
export const DONE_MARKER_RETRY_DELAYS_MS: readonly number[] = [250, 1000, 5000]

const ANSWERED = { status: 200, code: 'processed' } as const

function failure(run: Run, cause: unknown, what: string): StoreError {
  const error = new StoreError('complete', cause, run.eventId, run.eventType)
  // The delivery was answered 200 `processed`: the handlers did succeed. The log line says so, not 503.
  error.answered = ANSWERED
  error.message += `; ${what}`
  return error
}

/**
 * The done marker of `run` failed (`cause`) after its handlers succeeded: the answer stays 200 `processed`, the
 * failure is reported as such, and the marker is written again in the background, never holding the request.
 * Until it is written the claim holds the event: a try that fails renews the claim (`extend`), so a copy of the
 * event is answered 409, never run; a claim found lost is reported, as is a marker still unwritten after
 * {@link DONE_MARKER_RETRY_DELAYS_MS}' tries (it is tried on, every few seconds), or when `close` ends the tries. A
 * store without `extend` cannot hold the claim: its marker is tried those few times only, within the lease.
 * The retries are the receiver's background work: `close` waits for them (within its `timeoutMs`), and shuts the
 * store down only after the last.
 */
export function retryDoneMarker(
  state: {
    readonly store: WebhookStore<object>
    readonly eventHandler: EventHandler
    readonly leaseMs: number
    readonly claims: Claims
  },
  run: Run,
  cause: unknown,
): void {
  const { store, eventHandler, leaseMs, claims } = state
  const { eventId, token } = run
  const extend = store.extend?.bind(store)
  const tries = DONE_MARKER_RETRY_DELAYS_MS.length
  const longest = DONE_MARKER_RETRY_DELAYS_MS[tries - 1] as number
  const finished = claims.background()
  report(
    eventHandler,
    failure(
      run,
      cause,
      extend
        ? 'answered 200 processed (the handlers succeeded); the done marker is retried in the background, its claim held until it is written'
        : `answered 200 processed (the handlers succeeded); the done marker is retried in the background, ${tries} times at most`,
    ),
  )
  const lost = (what: string) => {
    report(eventHandler, failure(run, new Error(what), 'a retry of the service may run the handlers again'))
    finished()
  }
  const attempt = (index: number, last: unknown) => {
    if (index === tries) {
      if (!extend) {
        const what = `the done marker was not written after ${tries} retries: a retry of the service once the claim's lease ends may run the handlers again`
        report(eventHandler, failure(run, last, what))
        finished()
        return
      }
      const what = `the done marker was not written after ${tries} retries: its claim is held and the marker retried every ${Math.round(Math.min(longest, leaseMs / 3))} ms until it is`
      report(eventHandler, failure(run, last, what))
    }
    const delay = Math.min(DONE_MARKER_RETRY_DELAYS_MS[index] ?? longest, leaseMs / 3)
    const timer = setTimeout(async () => {
      let done: boolean
      try {
        done = await store.complete(eventId, token)
      } catch (error) {
        if (claims.stopped) return lost('the receiver closed before the done marker was written')
        try {
          if (extend && !(await extend(eventId, token, leaseMs))) {
            return lost('claim lost before the done marker was written (its lease ended)')
          }
        } catch {
          // Not renewed this time: the lease still runs, and the next try renews it or finds it lost.
        }
        attempt(index + 1, error)
        return
      }
      if (!done) return lost('claim lost before the done marker was written (its lease ended)')
      warn(
        eventHandler,
        { code: 'done_marker_retried', event_id: eventId, event_type: run.eventType, status: 200, retry: index + 1 },
        `${run.eventType} ${eventId}: done marker written on background retry ${index + 1} (answered 200 processed)`,
      )
      finished()
    }, delay)
    ;(timer as { unref?: () => void }).unref?.()
  }
  attempt(0, cause)
}
