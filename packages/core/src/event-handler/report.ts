import type { WebhookError } from '../errors.js'
import type { EventHandler } from './state.js'

/** Hands `error` to every `onError` listener, or logs it in one line when there is none. A throwing listener is logged. */
export function report(state: EventHandler, error: WebhookError): void {
  const { errorListeners, logger } = state
  if (errorListeners.length === 0) {
    logger.error(`[payhooks] ${error.status} ${error.code}: ${error.message}`)
    return
  }
  for (const listener of errorListeners) {
    try {
      listener(error)
    } catch (listenerError) {
      logger.error(`[payhooks] onError listener threw: ${String(listenerError).split('\n')[0]}`)
    }
  }
}

/** Logs a one-line warning (`logger.warn`, else `logger.error`); warnings do not go to `onError`. */
export function warn(state: EventHandler, message: string): void {
  const { logger } = state
  ;(logger.warn ?? logger.error).call(logger, `[payhooks] ${message}`)
}
