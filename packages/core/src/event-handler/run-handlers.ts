import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { Handler, HandlerContext, VerifiedEvent } from '../types.js'
import { isThenable } from '../util/thenable.js'
import type { EventHandler } from './state.js'

const NO_ERRORS: unknown[] = []

/**
 * Runs the handlers of `event.event_type` and the `onAny` handlers, concurrently, each with `event` and the same
 * `context`, and gives what they threw (empty when all succeeded): synchronously when no handler returned a
 * promise, else as a promise that never rejects. With a telemetry `scope`, each handler runs through it (a span
 * and a duration each), always as a promise.
 */
export function runHandlers(
  state: EventHandler,
  event: VerifiedEvent,
  context: HandlerContext,
  scope?: TelemetryScope,
): unknown[] | Promise<unknown[]> {
  if (scope) return runObserved(state, event, context, scope)
  const { anyHandlers } = state
  const specific = state.handlers.get(event.event_type)
  const all = specific ? (anyHandlers.length > 0 ? [...specific, ...anyHandlers] : specific) : anyHandlers
  if (all.length === 1) {
    try {
      const result = (all[0] as Handler<VerifiedEvent>)(event, context)
      return isThenable(result) ? Promise.resolve(result).then(noErrors, oneError) : NO_ERRORS
    } catch (error) {
      return [error]
    }
  }
  let async = false
  let threw = false
  const results = all.map((handler) => {
    try {
      const result = (handler as Handler<VerifiedEvent>)(event, context)
      if (isThenable(result)) async = true
      return result
    } catch (error) {
      threw = true
      return new Thrown(error)
    }
  })
  if (!async) return threw ? results.flatMap((r) => (r instanceof Thrown ? [r.error] : [])) : NO_ERRORS
  return Promise.allSettled(results.map((r) => (r instanceof Thrown ? Promise.reject(r.error) : r))).then((settled) =>
    settled.flatMap((r) => (r.status === 'rejected' ? [r.reason] : [])),
  )
}

/** What a handler threw synchronously, kept in its place among the others' results. */
class Thrown {
  constructor(readonly error: unknown) {}
}

const noErrors = () => NO_ERRORS
const oneError = (error: unknown) => [error]

/** The same, each handler run through the telemetry scope. */
async function runObserved(
  state: EventHandler,
  event: VerifiedEvent,
  context: HandlerContext,
  scope: TelemetryScope,
): Promise<unknown[]> {
  const run = async (handler: Handler<never, never>, kind: 'on' | 'any', index: number) =>
    scope.handler({ kind, index, name: handler.name }, () => (handler as Handler<VerifiedEvent>)(event, context))
  const runs = (state.handlers.get(event.event_type) ?? []).map((handler, index) => run(handler, 'on', index))
  for (const [index, handler] of state.anyHandlers.entries()) runs.push(run(handler, 'any', index))
  const results = await Promise.allSettled(runs)
  return results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
}
