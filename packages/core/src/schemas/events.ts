import * as v from 'valibot'
import { EVENT_TYPES } from '../service-contract.js'

/**
 * Keeps unknown fields at run time (the service adds fields, and handlers must see them) while the
 * type lists only the known ones, so a misspelt field is a compile error in the user's handler.
 */
function passthrough<const E extends v.ObjectEntries>(entries: E): v.ObjectSchema<E, undefined> {
  return v.looseObject(entries) as unknown as v.ObjectSchema<E, undefined>
}

const decimal = v.number()
const datetime = v.string()
const id = v.string()
/** Deprecated by the service in favour of `merchant_id`; still sent by some events, as a string or a number. */
const stringOrNumber = v.custom<string | number>(
  (value) => typeof value === 'string' || typeof value === 'number',
  'Invalid type: Expected string or number',
)
const clientId = v.optional(stringOrNumber)

/** Fields every message has, whatever its type: enough to answer, dedupe and route it. */
export const baseEnvelopeSchema = v.looseObject({
  event_type: v.pipe(v.string(), v.minLength(1)),
  event_id: v.pipe(v.string(), v.minLength(1)),
})

function envelope<const T extends string, D extends v.GenericSchema>(type: T, data: D) {
  return passthrough({
    event_type: v.literal(type),
    event_id: id,
    merchant_id: v.pipe(v.number(), v.integer()),
    created_at: datetime,
    client_id: clientId,
    data,
  })
}

/** `merchant_activated_for_payment_type` (spec 6.4): a merchant is enabled for card or ACH for the first time. */
export const merchantActivatedForPaymentTypeSchema = envelope(
  'merchant_activated_for_payment_type',
  passthrough({
    first_name: v.string(),
    last_name: v.string(),
    email: v.string(),
    company_name: v.string(),
    /** `credit_card` or `ach` (kept open: the service may add payment types). */
    payment_type: v.string(),
    merchant_key: v.string(),
    merchant_id: v.pipe(v.number(), v.integer()),
    /** Merchant id in the partner system; may be empty or null. */
    external_id: v.nullish(v.string(), null),
    processor: v.string(),
    /** ISO 4217 code (CAD or USD); absent for ACH. */
    currency_code: v.optional(v.string()),
  }),
)

/** `sale_created_from_batch` (spec 6.5): one sale of a batch was attempted. The full sale response is not specified, so only `transaction_id` is required. */
export const saleCreatedFromBatchSchema = envelope(
  'sale_created_from_batch',
  passthrough({
    external_id: v.nullish(v.string(), null),
    transaction_id: id,
    surcharge_amount: v.optional(decimal),
    acquirer_message: v.optional(v.nullable(v.string())),
    authorization_code: v.optional(v.nullable(v.string())),
    batch_id: v.optional(stringOrNumber),
    card: v.optional(
      passthrough({
        card_brand: v.optional(v.string()),
        last4: v.optional(v.string()),
        expiration_month: v.optional(stringOrNumber),
        expiration_year: v.optional(stringOrNumber),
      }),
    ),
    avs: v.optional(passthrough({ postal_code: v.optional(v.nullable(v.string())) })),
    outcome: v.optional(
      passthrough({
        result: v.optional(v.string()),
        code: v.optional(stringOrNumber),
        description: v.optional(v.string()),
      }),
    ),
  }),
)

const settlementData = {
  transaction_id: id,
  /** Authorized amount, including the card surcharge. */
  transaction_amount: decimal,
  transaction_surcharge_amount: decimal,
  transaction_external_id: v.nullish(v.string(), null),
  transaction_description: v.nullish(v.string(), null),
  transaction_date: datetime,
  /** Funding code from the processor (for ACH returns: the NACHA return code). */
  settlement_code: v.string(),
  /** Amount funded; negative when a refund settled. */
  settlement_amount: decimal,
  settlement_date: datetime,
  /** Absent when fees are inapplicable or unavailable. */
  transaction_fees_amount: v.optional(decimal),
  transaction_net_amount: decimal,
}

/** `transaction_settled` (spec 6.6): funds were transferred. */
export const transactionSettledSchema = envelope('transaction_settled', passthrough(settlementData))

/** `transaction_returned` (spec 6.7): funds were not transferred. Its envelope has a top-level `settlement_date` and may lack `created_at`. */
export const transactionReturnedSchema = passthrough({
  ...envelope('transaction_returned', v.unknown()).entries,
  created_at: v.optional(datetime),
  settlement_date: v.optional(datetime),
  data: passthrough({ ...settlementData, settlement_description: v.optional(v.string()) }),
})

/** Schemas of every event type whose body the spec shows, keyed by `event_type`. */
export const eventSchemas = {
  merchant_activated_for_payment_type: merchantActivatedForPaymentTypeSchema,
  sale_created_from_batch: saleCreatedFromBatchSchema,
  transaction_settled: transactionSettledSchema,
  transaction_returned: transactionReturnedSchema,
} as const

/** Event type names the spec lists, including those whose body it does not show. */
export const knownEventTypes = EVENT_TYPES

/** A map from event type to the valibot schema of its whole message. */
export type SchemaMap = Record<string, v.GenericSchema<unknown, { event_type: string; event_id: string }>>

/**
 * What the `schemas` option takes: a {@link SchemaMap}, or what a conditional gives
 * (`process.env.X ? { payment_created: schema } : {}`), where a key may be missing or `undefined` in a branch.
 */
export type SchemaMapOption = { readonly [eventType: string]: SchemaMap[string] | undefined }

export type BuiltInSchemas = typeof eventSchemas

/** A message whose type has no schema: the envelope is checked, `data` is yours to validate. */
export interface UnknownEvent<T extends string = string> {
  event_type: T
  event_id: string
  merchant_id?: number
  created_at?: string
  data: unknown
  [field: string]: unknown
}

/** Typed events, keyed by event type, inferred from a schema map. */
export type EventsOf<S extends SchemaMap> = { [K in keyof S & string]: v.InferOutput<S[K]> }

export type MerchantActivatedForPaymentTypeEvent = v.InferOutput<typeof merchantActivatedForPaymentTypeSchema>
export type SaleCreatedFromBatchEvent = v.InferOutput<typeof saleCreatedFromBatchSchema>
export type TransactionSettledEvent = v.InferOutput<typeof transactionSettledSchema>
export type TransactionReturnedEvent = v.InferOutput<typeof transactionReturnedSchema>

/** Edit distance between `a` and `b`, up to `limit + 1`. */
function distance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const current = [i]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      )
    }
    previous = current
  }
  return previous[b.length] as number
}

/**
 * The candidate closest to `type` by edit distance, if within `maxDistance` (the first one on a tie): the "did you
 * mean" for a misspelt event type.
 *
 * @example
 * closestEventType('transaction_setled') // 'transaction_settled'
 */
export function closestEventType(
  type: string,
  candidates: readonly string[] = knownEventTypes,
  maxDistance = 3,
): string | undefined {
  let closest: string | undefined
  let best = maxDistance + 1
  for (const candidate of candidates) {
    const d = distance(type, candidate, maxDistance)
    if (d < best) {
      best = d
      closest = candidate
    }
  }
  return closest
}
