import type { ErrorListener, Handler } from '../types.js'

/** Where failures are logged when no `onError` listener is registered; warnings go to `warn`, else `error`. */
export interface Logger {
  error(message: string): void
  warn?(message: string): void
}

/** The handlers and error listeners of one receiver. */
export interface EventHandler {
  readonly handlers: Map<string, Handler<never, never>[]>
  readonly anyHandlers: Handler<never, never>[]
  readonly errorListeners: ErrorListener[]
  readonly logger: Logger
}

/** An empty registry whose failures go to `logger` until an `onError` listener is added. */
export function createEventHandler(logger: Logger): EventHandler {
  return { handlers: new Map(), anyHandlers: [], errorListeners: [], logger }
}
