import { WebhookError } from './webhook-error.js'

/** One problem found by a schema, flattened from valibot's issue. */
export interface SchemaIssue {
  /** Dotted path to the field, such as `data.settlement_amount`. */
  path: string
  /**
   * What was expected there (`expected number`, `missing`, `failed email`, `failed min_length, expected >=3`):
   * never the value refused, which stays in the event (and in its dead letter).
   */
  message: string
}

/**
 * 422: a correctly signed event of a known type does not match its schema. Answered non-2XX so the
 * service keeps retrying (hourly, for 72 hours) while you fix the schema; no handler ran. The message names every
 * issue by its path and what was expected there (`data.a: expected number; data.b: missing`), as does `issues`,
 * never the values refused: it is safe to log.
 */
export class SchemaError extends WebhookError {
  override name = 'SchemaError'
  constructor(
    eventId: string,
    eventType: string,
    /** Every issue valibot found, in its order. */
    readonly issues: SchemaIssue[],
    /**
     * The verified message as parsed (before its schema refused it), when the receiver made this error: parking
     * it needs no second parse.
     */
    readonly event?: { event_id: string; event_type: string; [field: string]: unknown },
  ) {
    const all = issues.map((issue) => `${issue.path || '(root)'}: ${issue.message}`).join('; ')
    super(
      'schema_mismatch',
      422,
      `${eventType} ${eventId} does not match its schema${all ? `: ${all}` : ''}`,
      eventId,
      eventType,
    )
  }
}

/**
 * 422: a correctly signed event whose `created_at` is older than `maxEventAgeMs` and that the store does not know
 * as handled. The service stops retrying after 72 hours and the store forgets handled events after its retention,
 * so an event this old is a manual resend after a long outage, or a replay of a captured delivery: the receiver
 * cannot tell which, so it runs no handler. With a durable dead-letter store the event is parked (200 `parked`,
 * code `stale_event`) for `webhooks.deadLetters.replay`; without one it is answered 422, so the service keeps it and retries.
 * One the store knows as handled is a `duplicate` (200) instead. A `transaction_returned`, which has no
 * `created_at`, is aged by its signed `settlement_date` (`timeField`); other events without `created_at` are never
 * refused on age.
 */
export class StaleEventError extends WebhookError {
  override name = 'StaleEventError'
  constructor(
    eventId: string,
    eventType: string,
    /** The event's `created_at` (or `settlement_date`, see `timeField`), as sent. */
    readonly createdAt: string,
    /** How old the event was when it arrived. */
    readonly ageMs: number,
    /** The verified event, so it can still be acted on (with `webhooks.dispatch`, say) if it is genuine. */
    readonly event: { event_id: string; event_type: string; [field: string]: unknown },
    /**
     * The signed field `createdAt` holds: `settlement_date` for a `transaction_returned`, which has no `created_at`.
     * @default 'created_at'
     */
    readonly timeField: 'created_at' | 'settlement_date' = 'created_at',
  ) {
    super(
      'stale_event',
      422,
      `${eventType} ${eventId} ${timeField === 'created_at' ? 'created at' : 'with settlement_date'} ${createdAt} is ${Math.round(ageMs / 3_600_000)} h old, older than maxEventAgeMs, and not handled before; handlers not run (a resend after an outage, or a replay)`,
      eventId,
      eventType,
    )
  }
}

/**
 * 503: a correctly signed event whose `created_at` is further ahead of this receiver's clock than
 * `maxClockSkewMs`. One of the two clocks is wrong; accepting it would let it be replayed for longer than the
 * store remembers it, so it is answered non-2XX and the service's hourly retry succeeds once the clocks agree.
 */
export class FutureEventError extends WebhookError {
  override name = 'FutureEventError'
  constructor(
    eventId: string,
    eventType: string,
    /** The event's `created_at`, as sent. */
    readonly createdAt: string,
    /** How far ahead of this receiver's clock it is. */
    readonly aheadMs: number,
  ) {
    super(
      'future_event',
      503,
      `${eventType} ${eventId} created at ${createdAt} is ${Math.round(aheadMs / 1000)} s ahead of this receiver's clock, more than maxClockSkewMs`,
      eventId,
      eventType,
    )
  }
}

/**
 * A validly signed delivery whose `event_id` was handled already (or is being handled) with a body of other bytes.
 * It is answered exactly as a plain copy would be: 200 `duplicate` (`status` 200), or 409 while the first body's
 * handlers still run (`status` 409); no handler runs for it, and this error is reported besides. The service signs
 * each delivery of an event from one stored body, so two bodies under one id mean the sender changed the event,
 * or reused an id: compare the two with what the service holds for the event. Carries both body digests (the
 * first 16 bytes of SHA-256 of the exact bytes, as 32 hex characters: the start of `sha256sum`'s output), never
 * the bodies.
 */
export class EventConflictError extends WebhookError {
  override name = 'EventConflictError'
  constructor(
    eventId: string,
    eventType: string,
    /** Digest of this delivery's body. */
    readonly receivedDigest: string,
    /**
     * Digest of the body the event was (or is being) handled with: 32 hex characters, or the first 16 (64 bits) from
     * a store that keeps no more in its done markers (`redisStore`).
     */
    readonly handledDigest: string,
    /** True when the first body's handlers were still running (answered 409), false when they were done (200). */
    readonly inProgress: boolean,
    /**
     * True when the first body is not handled yet but parked in the dead-letter store (`handledDigest` is then the
     * parked bytes' digest): those stay parked, this copy is not.
     * @default false
     */
    readonly parked = false,
  ) {
    const first = parked ? 'parked' : inProgress ? 'being handled' : 'handled'
    super(
      'event_conflict',
      inProgress ? 409 : 200,
      `${eventType} ${eventId} received with a body (sha256 ${receivedDigest}) other than the one ${first} (sha256 ${handledDigest}); answered as a duplicate, handlers not run${parked ? ', the parked bytes kept' : ''}`,
      eventId,
      eventType,
    )
  }
}
