import * as v from 'valibot'
import type { Issue } from './errors.js'

// Objects are loose: fields the spec does not show pass through untouched, both ways.

const nonEmpty = v.pipe(v.string(), v.minLength(1, 'must not be empty'))
const absoluteUrl = v.pipe(v.string(), v.url('must be an absolute URL'))
const integer = v.pipe(v.number(), v.integer('must be an integer'))

/**
 * A subscription as sent on create and update (spec 2.1, 4).
 *
 * @example
 * const input: SubscriptionInput = { url: 'https://shop.example.com/webhooks', event_types: ['transaction_settled'], is_active: true }
 */
export interface SubscriptionInput {
  /** Endpoint that receives the event messages by HTTP POST. */
  url: string
  /** Event types delivered to `url`, such as `transaction_settled`. At least one. */
  event_types: string[]
  /** `true`: messages are delivered. */
  is_active: boolean
  /** Fields the spec does not show are sent as given. */
  [field: string]: unknown
}

/** A subscription as the service returns it on reads (spec 2.1). */
export interface Subscription {
  /** Prefixed opaque id, used in the other calls. */
  id: string
  url: string
  event_types: string[]
  is_active: boolean
  /** Key of the HMAC-SHA256 signature of every message (spec 6.2). */
  signature_secret: string
  [field: string]: unknown
}

/** What create returns: the new id and the secret to verify its messages with. */
export interface CreatedSubscription {
  id: string
  signature_secret: string
  [field: string]: unknown
}

/** The whole answer of Get all subscriptions. */
export interface SubscriptionList {
  total_item_count: number
  data: Subscription[]
  [field: string]: unknown
}

/** What Send test webhook returns. */
export interface TestWebhookResult {
  /** HTTP status the target endpoint answered to the service. */
  status_code: number
  [field: string]: unknown
}

/** A client token (spec 2.3). */
export interface ClientToken {
  /** A JWT, opaque to the caller. */
  token: string
  /** Expiry, parsed from the ISO 8601 UTC `expires` of the answer. */
  expires: Date
  [field: string]: unknown
}

export const subscriptionInputSchema = v.looseObject({
  url: absoluteUrl,
  event_types: v.pipe(v.array(nonEmpty), v.minLength(1, 'must list at least one event type')),
  is_active: v.boolean(),
})

export const idSchema = nonEmpty

export const resendIdsSchema = v.pipe(v.array(nonEmpty), v.minLength(1, 'must list at least one id'))

export const testWebhookInputSchema = v.looseObject({ url: absoluteUrl, eventType: nonEmpty })

const subscriptionSchema = v.looseObject({
  id: v.string(),
  url: v.string(),
  event_types: v.array(v.string()),
  is_active: v.boolean(),
  signature_secret: v.string(),
})

const ISO_DATETIME = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?$/i

/** The spec says UTC: a datetime without an offset is read as UTC, not as local time. */
export function parseUtcDatetime(text: string): Date | undefined {
  if (!ISO_DATETIME.test(text)) return undefined
  const hasZone = /(Z|[+-]\d{2}(:?\d{2})?)$/i.test(text.slice(10))
  const date = new Date(hasZone ? text : `${text.replace(' ', 'T')}Z`)
  return Number.isNaN(date.getTime()) ? undefined : date
}

const envelope = <S extends v.GenericSchema>(data: S) => v.looseObject({ data })

export const createdResponseSchema = envelope(v.looseObject({ id: nonEmpty, signature_secret: nonEmpty }))
export const subscriptionResponseSchema = envelope(subscriptionSchema)
export const subscriptionListSchema = v.looseObject({ total_item_count: integer, data: v.array(subscriptionSchema) })
export const testWebhookResponseSchema = envelope(v.looseObject({ status_code: integer }))
export const clientTokenResponseSchema = envelope(
  v.looseObject({
    token: nonEmpty,
    expires: v.pipe(
      v.string(),
      v.check((text) => parseUtcDatetime(text) !== undefined, 'must be an ISO 8601 datetime'),
      v.transform((text) => parseUtcDatetime(text) as Date),
    ),
  }),
)

/** valibot's own messages quote the received value, which may be a secret: keep only what was expected. */
export function toIssues(issues: readonly v.BaseIssue<unknown>[]): Issue[] {
  return issues.map((issue) => ({
    path: issue.path?.map((item) => String(item.key)).join('.') ?? '',
    message: issue.kind === 'schema' ? `expected ${issue.expected}` : issue.message,
  }))
}
