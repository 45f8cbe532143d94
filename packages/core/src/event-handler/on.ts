import type { ErrorListener, Handler } from '../types.js'
import type { EventHandler } from './state.js'

/** Adds `handler` for events of `type`. */
export function on(state: EventHandler, type: string, handler: Handler<never, never>): void {
  const list = state.handlers.get(type)
  if (list) list.push(handler)
  else state.handlers.set(type, [handler])
}

/** Adds `handler` for every event. */
export function onAny(state: EventHandler, handler: Handler<never, never>): void {
  state.anyHandlers.push(handler)
}

/** Adds `listener` for every failure; from then on failures are no longer logged. */
export function onError(state: EventHandler, listener: ErrorListener): void {
  state.errorListeners.push(listener)
}
