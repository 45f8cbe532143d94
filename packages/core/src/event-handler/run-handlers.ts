import type { TelemetryScope } from '../telemetry.js'
import { isThenable } from '../thenable.js'
import type { Handler, HandlerContext, QueuedEvent } from '../types.js'
import type { EventHandler } from './state.js'

const NO_ERRORS: unknown[] = []

/**
 * Runs the handlers of `event.event_type` and the `onAny` handlers, concurrently, each with `event` and the same
 * `context`, and resolves with what they threw (empty when all succeeded). A single handler runs without
 * `Promise.allSettled`, and a synchronous one without awaiting anything. With a telemetry `scope`, each handler
 * runs through it (a span and a duration each).
 */
export async function runHandlers(
  state: EventHandler,
  event: QueuedEvent,
  context: HandlerContext,
  scope?: TelemetryScope,
): Promise<unknown[]> {
  if (scope) return runObserved(state, event, context, scope)
  const { anyHandlers } = state
  const specific = state.handlers.get(event.event_type)
  const all = specific ? (anyHandlers.length > 0 ? [...specific, ...anyHandlers] : specific) : anyHandlers
  if (all.length === 1) {
    try {
      const result = (all[0] as Handler<QueuedEvent>)(event, context)
      if (isThenable(result)) await result
      return NO_ERRORS
    } catch (error) {
      return [error]
    }
  }
  const results = await Promise.allSettled(
    all.map(async (handler) => (handler as Handler<QueuedEvent>)(event, context)),
  )
  return results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
}

/** The same, each handler run through the telemetry scope. */
async function runObserved(
  state: EventHandler,
  event: QueuedEvent,
  context: HandlerContext,
  scope: TelemetryScope,
): Promise<unknown[]> {
  const run = async (handler: Handler<never, never>, kind: 'on' | 'any', index: number) =>
    scope.handler({ kind, index, name: handler.name }, () => (handler as Handler<QueuedEvent>)(event, context))
  const runs = (state.handlers.get(event.event_type) ?? []).map((handler, index) => run(handler, 'on', index))
  for (const [index, handler] of state.anyHandlers.entries()) runs.push(run(handler, 'any', index))
  const results = await Promise.allSettled(runs)
  return results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []))
}
