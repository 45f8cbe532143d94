import { type Counter, createNoopMeter, type Histogram, type Meter } from '@opentelemetry/api'

export interface Instruments {
  /** False for the API's no-op meter: no SDK, so nothing to record. */
  readonly recording: boolean
  readonly deliveries: Counter
  readonly dispatches: Counter
  readonly handlerDuration: Histogram
  readonly storeDuration: Histogram
  readonly dedupeHits: Counter
  readonly storeErrors: Counter
  readonly deadLetters: Counter
  readonly alerts: Counter
  readonly conflicts: Counter
  readonly secretVerified: Counter
  readonly answerDuration: Histogram
  readonly eventAge: Histogram
  readonly handlerTimeouts: Counter
  readonly leaseRenewals: Counter
}

/** Seconds, from 1 ms to a minute: store calls take milliseconds, handlers up to the lease. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Seconds, from a second to past the 72-hour retry window: an event's age when it is handled. */
const AGE_BUCKETS = [
  1,
  10,
  60,
  300,
  900,
  3600,
  3 * 3600,
  6 * 3600,
  12 * 3600,
  24 * 3600,
  48 * 3600,
  66 * 3600,
  72 * 3600,
  73 * 3600,
]

export function instrumentsOf(meter: Meter): Instruments {
  const advice = { explicitBucketBoundaries: DURATION_BUCKETS }
  return {
    recording: meter !== createNoopMeter(),
    deliveries: meter.createCounter('payhooks.deliveries', {
      description: 'Deliveries answered, by outcome and HTTP status.',
      unit: '{delivery}',
    }),
    dispatches: meter.createCounter('payhooks.dispatches', {
      description: 'Queued events dispatched by workers, and dead letters replayed, by outcome.',
      unit: '{dispatch}',
    }),
    handlerDuration: meter.createHistogram('payhooks.handler.duration', {
      description: 'Duration of each handler run.',
      unit: 's',
      advice,
    }),
    storeDuration: meter.createHistogram('payhooks.store.duration', {
      description: 'Duration of each store, queue and dead-letter store call.',
      unit: 's',
      advice,
    }),
    dedupeHits: meter.createCounter('payhooks.dedupe.hits', {
      description: 'Events found already handled, so their handlers did not run again.',
      unit: '{event}',
    }),
    storeErrors: meter.createCounter('payhooks.store.errors', {
      description: 'Store, queue and dead-letter store failures reported.',
      unit: '{error}',
    }),
    deadLetters: meter.createCounter('payhooks.dead_letters', {
      description: 'Signed events parked in the dead-letter store.',
      unit: '{event}',
    }),
    alerts: meter.createCounter('payhooks.alerts', {
      description:
        'Alerts the receiver raised about itself (payhooks.alert.firing true) and resolved (false), by payhooks.alert.name and payhooks.alert.severity.',
      unit: '{alert}',
    }),
    conflicts: meter.createCounter('payhooks.event.conflicts', {
      description: 'Copies of a handled (or running) event received with other bytes: answered as duplicates, not run.',
      unit: '{event}',
    }),
    secretVerified: meter.createCounter('payhooks.secret.verified', {
      description: 'Deliveries verified, by which secret of the list verified them: retire one once it stays at zero.',
      unit: '{delivery}',
    }),
    answerDuration: meter.createHistogram('payhooks.answer.duration', {
      description: 'Time from the first byte of a delivery (the receive call) to its answer, by outcome and status.',
      unit: 's',
      advice,
    }),
    handlerTimeouts: meter.createCounter('payhooks.handler.timeouts', {
      description:
        'Runs whose handlers overran maxRunMs (HandlerTimeoutError), by payhooks.event.type: their signal was aborted and they count as hung until they settle.',
      unit: '{run}',
    }),
    leaseRenewals: meter.createCounter('payhooks.lease.renewals', {
      description:
        'Claims renewed while handlers run (extend), by payhooks.lease.lost: true when the claim was gone (the handler may run twice).',
      unit: '{renewal}',
    }),
    eventAge: meter.createHistogram('payhooks.event.age', {
      description:
        "Age of an event when handled (its signed created_at to the outcome): near 72 h, the service's retries run out.",
      unit: 's',
      advice: { explicitBucketBoundaries: AGE_BUCKETS },
    }),
  }
}
