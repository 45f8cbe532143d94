import { isThenable } from '../thenable.js'
import type { Handler, HandlerContext, QueuedEvent } from '../types.js'
import type { EventHandler } from './state.js'

const NO_ERRORS: unknown[] = []

/**
 * Runs the handlers of `event.event_type` and the `onAny` handlers, concurrently, each with `event` and the same
 * `context`, and resolves with what they threw (empty when all succeeded). A single handler runs without
 * `Promise.allSettled`, and a synchronous one without awaiting anything.
 */
export async function runHandlers(
  state: EventHandler,
  event: QueuedEvent,
  context: HandlerContext,
): Promise<unknown[]> {
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
