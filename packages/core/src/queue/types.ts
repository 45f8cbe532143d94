// What queue mode and a worker pass to and get from the receiver: the options of enqueue and dispatch, and what a
// dispatch did. Re-exported by ../types.ts (the public types).
import type { TraceCarrier } from '../telemetry/telemetry.js'

/** The second argument of `WebhookQueue.enqueue`. */
export interface EnqueueOptions {
  /**
   * Trace context of the delivery (with `telemetry` set): keep it with the event and pass it back to
   * `Webhooks.dispatch`, so the worker's trace links to the delivery's.
   */
  trace?: TraceCarrier
}

/** The second argument of `Webhooks.dispatch`. */
export interface DispatchOptions {
  /** The trace context the queue was given with the event ({@link EnqueueOptions.trace}). */
  trace?: TraceCarrier
  /**
   * Called with the event's ordering key (from its type's `ordering` rule) once it is known, before the claim: for a
   * queue that hands the key on to the events waiting for it as soon as this run ends (`@payhooks/bullmq`'s worker
   * does). Not called for an event without a rule.
   * @example
   * let key: string | undefined
   * const outcome = await webhooks.dispatch(event, { onOrderingKey: (k) => (key = k) })
   */
  onOrderingKey?: (key: string) => void
}

/** What `Webhooks.dispatch` did with an event. */
export type DispatchOutcome =
  | { status: 'processed' | 'duplicate' }
  /**
   * Another delivery or worker holds the claim; try again after `retryAfterMs`. For an event with an ordering
   * rule, `orderingKey` is its key, and `keyHeldSince` (milliseconds since the epoch), when the store says so, is
   * since when another event's claim holds that key: the event waits for the key rather than being handled.
   */
  | { status: 'in_progress'; retryAfterMs?: number; orderingKey?: string; keyHeldSince?: number }
