import { StoreError } from '../errors/index.js'
import { type EventHandler, report, warn } from '../event-handler/index.js'
import type { WebhookStore } from '../store.js'
import type { Claims, Run } from './claims.js'

/**
 * Waits before each background retry of a done marker that failed after the handlers succeeded: bounded (three
 * tries within about 6 s, inside any lease), so a store that stays down costs three calls per event, not a loop.
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
 * failure is reported as such, and the marker is written again in the background, up to
 * {@link DONE_MARKER_RETRY_DELAYS_MS} times, never holding the request. Until one succeeds the claim's lease holds
 * the event; if none does, a retry of the service after the lease may run its handlers again, and that is reported.
 * The retries are the receiver's background work: `close` waits for them (within its `timeoutMs`), and shuts the
 * store down only after the last.
 */
export function retryDoneMarker(
  state: { readonly store: WebhookStore<object>; readonly eventHandler: EventHandler; readonly claims: Claims },
  run: Run,
  cause: unknown,
): void {
  const tries = DONE_MARKER_RETRY_DELAYS_MS.length
  const finished = state.claims.background()
  report(
    state.eventHandler,
    failure(
      run,
      cause,
      `answered 200 processed (the handlers succeeded); the done marker is retried in the background, ${tries} times at most`,
    ),
  )
  const attempt = (index: number, last: unknown) => {
    const delay = DONE_MARKER_RETRY_DELAYS_MS[index]
    if (delay === undefined) {
      const what = `the done marker was not written after ${tries} retries: a retry of the service once the claim's lease ends may run the handlers again`
      report(state.eventHandler, failure(run, last, what))
      finished()
      return
    }
    const timer = setTimeout(async () => {
      let done: boolean
      try {
        done = await state.store.complete(run.eventId, run.token)
      } catch (error) {
        attempt(index + 1, error)
        return
      }
      if (done) {
        warn(
          state.eventHandler,
          {
            code: 'done_marker_retried',
            event_id: run.eventId,
            event_type: run.eventType,
            status: 200,
            retry: index + 1,
          },
          `${run.eventType} ${run.eventId}: done marker written on background retry ${index + 1} of ${tries} (answered 200 processed)`,
        )
      } else {
        const lost = new Error('claim lost before the done marker was written (its lease ended)')
        report(state.eventHandler, failure(run, lost, 'a retry of the service may run the handlers again'))
      }
      finished()
    }, delay)
    ;(timer as { unref?: () => void }).unref?.()
  }
  attempt(0, cause)
}
