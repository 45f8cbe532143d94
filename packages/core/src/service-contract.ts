// The payment service's webhook contract as numbers and names, each from its section of the spec, in one place
// for every package (and the sandbox's dashboard, which loads this file in the browser: it imports nothing).

/**
 * How long the service waits for an answer: a delivery succeeds when the endpoint answers 2XX within 10 seconds,
 * anything later counts as a failure and is retried (spec 6.1 item 2; section 8, "Webhook endpoint response time").
 */
export const ANSWER_LIMIT_MS = 10_000

/** The service retries a failed delivery once every hour (spec 6.1 item 3; section 8, "Retry interval"). */
export const RETRY_INTERVAL_MS = 3_600_000

/** For how many hours the service retries: 72 (spec 6.1 item 3; section 8, "Retry period"). */
export const RETRY_HOURS = 72

/**
 * The retry period in milliseconds: 72 hours after the first send the last retry is made (spec 6.1 item 3;
 * section 8). A store must remember a handled event at least this long, so a retry is known as a duplicate.
 */
export const RETRY_WINDOW_MS = RETRY_HOURS * RETRY_INTERVAL_MS

/**
 * An event signed this long ago (71 hours) is on the service's last tries: one interval before the end of the
 * retry period (spec 6.1 item 3). A handler failure then is parked rather than answered 5XX.
 */
export const LAST_TRIES_AFTER_MS = RETRY_WINDOW_MS - RETRY_INTERVAL_MS

/** The header that carries the signature (spec 6.2). Header lookups are case-insensitive. */
export const SIGNATURE_HEADER = 'service-hmac-sha256'

/** Event type names the spec lists (spec 6.3), including `payment_created`, whose body it does not show. */
export const EVENT_TYPES = [
  'merchant_activated_for_payment_type',
  'sale_created_from_batch',
  'transaction_settled',
  'transaction_returned',
  'payment_created',
] as const

/** Event types that are reseller scoped: subscribed without the `Service-Merchant-Id` header (spec 6.4). */
export const RESELLER_SCOPED_EVENT_TYPES = ['merchant_activated_for_payment_type'] as const
