import type { WebhookError } from '../errors/index.js'
import { report } from '../event-handler/index.js'
import { errorAnswer } from '../http/answers.js'
import type { Answered } from '../stats/index.js'
import type { TelemetryScope } from '../telemetry/telemetry.js'
import type { WebhookResult } from '../types.js'
import type { IncomingDelivery } from './delivery.js'
import type { Engine } from './engine.js'

/** A delivery refused before any work: nothing of it known. */
const NOTHING_KNOWN: Answered = { event: undefined, error: undefined, verifiedWith: undefined }

// The one place a delivery's answer goes out: its telemetry scope ends, its error is reported, it is answered.

/** Reports `error` (from `source`, the client's address) and gives its answer (its status and fixed one-line reason). */
export function reportedAnswer(engine: Engine, error: WebhookError, source?: string): WebhookResult {
  report(engine.eventHandler, error, source)
  return errorAnswer(error)
}

function endScope(scope: TelemetryScope | undefined, error: WebhookError): void {
  scope?.end({ outcome: error.code, status: error.status, error })
}

/** A delivery refused before any work (closing, or an adapter's `reject`): its own telemetry scope, when observed. */
export function refusedAnswer(engine: Engine, error: WebhookError, source?: string): WebhookResult {
  endScope(engine.eventHandler.telemetry?.receive(), error)
  engine.eventHandler.stats.answered(NOTHING_KNOWN, error.code, error.status, Number.NaN)
  return reportedAnswer(engine, error, source)
}

/** The delivery's work settled before the deadline: count it out, end its scope with `result`, mark it answered. */
export function settledAnswer(engine: Engine, delivery: IncomingDelivery, result: WebhookResult): WebhookResult {
  engine.claims.finish()
  const outcome = delivery.outcome ?? delivery.error?.code ?? 'internal_error'
  delivery.scope?.end({ outcome, status: result.status, error: delivery.error })
  engine.eventHandler.stats.answered(delivery, outcome, result.status, delivery.due - engine.deadlineMs)
  engine.journal?.answered(delivery, outcome, result.status, delivery.due - engine.deadlineMs)
  delivery.phase = 'answered'
  return result
}

/**
 * The deadline passed first (`phase` is `timed_out` or `expired`): the delivery's scope ends with the answer (the
 * work's own spans end when it does), which goes out now.
 */
export function expiredAnswer(engine: Engine, delivery: IncomingDelivery, error: WebhookError): void {
  endScope(delivery.scope, error)
  engine.eventHandler.stats.answered(delivery, error.code, error.status, delivery.due - engine.deadlineMs)
  engine.journal?.answered(delivery, error.code, error.status, delivery.due - engine.deadlineMs)
  ;(delivery.resolve as (result: WebhookResult) => void)(reportedAnswer(engine, error, delivery.raw.remoteAddress))
}
