import { park } from '../dead-letters/index.js'
import { PausedError } from '../errors/index.js'
import { errorAnswer } from '../http/answers.js'
import type { IncomingDelivery } from '../receiver/delivery.js'
import type { Engine } from '../receiver/engine.js'
import type { VerifiedEvent, WebhookResult } from '../types.js'
import type { RawBody } from '../verify/signature.js'

/** The rest of a verified delivery's path, once it is known not to be paused. */
export type Proceed = (
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  event: VerifiedEvent,
) => WebhookResult | Promise<WebhookResult>

/**
 * A verified delivery while `engine.pauses.active`: before the first read of the pauses it waits for that read (a
 * receiver started mid-pause honours it from its first delivery); then, its type paused, it is parked as a `paused`
 * letter with a `deadLetters` store (200 `parked` once a durable one holds it), else answered 503 `paused`, nothing
 * claimed or run. A type not paused goes on (`proceed`).
 */
export function whilePaused(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  event: VerifiedEvent,
  proceed: Proceed,
): WebhookResult | Promise<WebhookResult> {
  const pauses = engine.pauses
  if (!pauses.loaded) return pauses.ready().then(() => whilePaused(engine, delivery, body, event, proceed))
  const pause = pauses.pauseOf(event.event_type)
  if (!pause) return proceed(engine, delivery, body, event)
  const error = new PausedError(pause.since, pause.eventType, event.event_id, event.event_type)
  delivery.error = error
  if (!engine.deadLetters) return errorAnswer(error)
  return parkPaused(engine, delivery, body, event, error)
}

async function parkPaused(
  engine: Engine,
  delivery: IncomingDelivery,
  body: RawBody,
  event: VerifiedEvent,
  error: PausedError,
): Promise<WebhookResult> {
  const { result, outcome } = await park(
    engine,
    { body, getHeader: delivery.raw.getHeader },
    error,
    event,
    delivery.scope,
  )
  if (outcome === 'duplicate') {
    delivery.outcome = 'duplicate'
    delivery.error = undefined
  } else if (outcome === 'parked') delivery.outcome = 'paused'
  return result
}
