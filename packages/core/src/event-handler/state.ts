import type { Log } from '../logging/log.js'
import { Throttle } from '../refusals/throttle.js'
import { Stats } from '../stats/index.js'
import type { Telemetry } from '../telemetry/telemetry.js'
import type { ErrorListener, Handler } from '../types.js'

/** The handlers and error listeners of one receiver, and where its failures and measurements go. */
export interface EventHandler {
  readonly handlers: Map<string, Handler<never, never>[]>
  readonly anyHandlers: Handler<never, never>[]
  readonly errorListeners: ErrorListener[]
  /** Failures go here until an `onError` listener is added; warnings always. */
  readonly log: Log
  readonly telemetry: Telemetry | undefined
  /** This process's delivery stats, for `webhooks.stats()`. */
  readonly stats: Stats
  /** Holds back repeated lines of `log` (signature refusals, identical store failures): one a second per reason. */
  readonly throttle: Throttle
}

/** An empty registry whose failures go to `log` until an `onError` listener is added. */
export function createEventHandler(log: Log, telemetry?: Telemetry): EventHandler {
  return {
    handlers: new Map(),
    anyHandlers: [],
    errorListeners: [],
    log,
    telemetry,
    stats: new Stats(),
    throttle: new Throttle(log),
  }
}
