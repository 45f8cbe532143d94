import { randomUUID } from 'node:crypto'

/**
 * Realistic sample messages for every event type whose body the spec shows (sections 6.4 to 6.7),
 * with their quirks: `client_id` as string or number, `transaction_returned` with a top-level
 * `settlement_date` and no `created_at`, null `external_id`, absent `currency_code` for ACH.
 * The CLI's `trigger`, the sandbox, the examples and the tests all use these.
 */
export const samples = {
  merchant_activated_for_payment_type: {
    event_type: 'merchant_activated_for_payment_type',
    event_id: 'evt_sample_merchant_activated',
    client_id: '1234',
    merchant_id: 1234,
    created_at: '2026-11-02T15:04:05Z',
    data: {
      first_name: 'Ada',
      last_name: 'Lovelace',
      email: 'ada@example.com',
      company_name: 'Analytical Engines LLC',
      payment_type: 'credit_card',
      merchant_key: 'mk_7f3c2a9e',
      merchant_id: 1234,
      external_id: 'partner-42',
      processor: 'tsys',
      currency_code: 'USD',
    },
  },
  sale_created_from_batch: {
    event_type: 'sale_created_from_batch',
    event_id: 'evt_sample_sale_created_from_batch',
    merchant_id: 1234,
    created_at: '2026-11-02T15:05:00Z',
    data: {
      external_id: 'order-1001',
      transaction_id: 'txn_0f8e7d6c',
      surcharge_amount: 0.3,
      acquirer_message: 'Approved',
      authorization_code: 'A1B2C3',
      batch_id: 'batch_77',
      card: { card_brand: 'visa', last4: '4242', expiration_month: 12, expiration_year: 2030 },
      avs: { postal_code: 'match' },
      outcome: { result: 'approved', code: '00', description: 'Approved' },
    },
  },
  transaction_settled: {
    event_type: 'transaction_settled',
    event_id: 'evt_sample_transaction_settled',
    client_id: 1234,
    merchant_id: 1234,
    created_at: '2026-11-03T08:00:00Z',
    data: {
      transaction_id: 'txn_0f8e7d6c',
      transaction_amount: 10.3,
      transaction_surcharge_amount: 0.3,
      transaction_external_id: 'order-1001',
      transaction_description: 'Blue widget',
      transaction_date: '2026-11-02T15:05:00Z',
      settlement_code: 'FUNDED',
      settlement_amount: 10.3,
      settlement_date: '2026-11-03T07:59:00Z',
      transaction_fees_amount: 0.45,
      transaction_net_amount: 9.85,
    },
  },
  transaction_returned: {
    event_type: 'transaction_returned',
    event_id: 'evt_sample_transaction_returned',
    merchant_id: 1234,
    settlement_date: '2026-11-05T08:00:00Z',
    data: {
      transaction_id: 'txn_1a2b3c4d',
      transaction_amount: 25,
      transaction_surcharge_amount: 0,
      transaction_external_id: null,
      transaction_description: 'ACH invoice 88',
      transaction_date: '2026-11-01T10:00:00Z',
      settlement_code: 'R01',
      settlement_amount: -25,
      settlement_date: '2026-11-05T08:00:00Z',
      transaction_net_amount: -25,
      settlement_description: 'Insufficient funds',
    },
  },
} as const

/** Event types with a sample body. */
export type SampleEventType = keyof typeof samples
export const sampleEventTypes = Object.keys(samples) as SampleEventType[]

/** Options of {@link sampleEvent}. */
export interface SampleEventOptions {
  /** @default a fresh `evt_<uuid>` */
  eventId?: string
  /** Sets `merchant_id` (and `client_id` where the sample has one). */
  merchantId?: number
  /** Fields merged over the sample's `data`. */
  data?: Record<string, unknown>
  /**
   * The message's signed time: its `created_at`, or the top-level `settlement_date` of a `transaction_returned`
   * (which has no `created_at`, so the receiver ages it by that date).
   * @default now
   */
  createdAt?: string
}

/**
 * A fresh message of `eventType`: the sample with a new `event_id` and its own ids, so that two calls never share a
 * `data.transaction_id` (a fresh `txn_<8 hex>`) or an order reference (`external_id` /
 * `transaction_external_id` `order-<same 8 hex>` where the sample has one): events sent into a table keyed on
 * either do not collide. `options.data` still sets any of them. Types without a sample (such as
 * `payment_created`, whose body the spec does not show) get the envelope and `data: {}`.
 *
 * @example
 * const event = sampleEvent('transaction_settled', { data: { settlement_amount: -5 } })
 */
export function sampleEvent(eventType: string, options: SampleEventOptions = {}): Record<string, unknown> {
  const sample = (samples as Record<string, Record<string, unknown>>)[eventType]
  const event: Record<string, unknown> = sample
    ? structuredClone(sample)
    : { event_type: eventType, event_id: '', merchant_id: 1234, created_at: '', data: {} }
  event.event_id = options.eventId ?? `evt_${randomUUID()}`
  freshIds(event.data as Record<string, unknown>)
  if ('created_at' in event) event.created_at = options.createdAt ?? new Date().toISOString()
  else if ('settlement_date' in event) event.settlement_date = options.createdAt ?? new Date().toISOString()
  if (options.merchantId !== undefined) {
    event.merchant_id = options.merchantId
    if (typeof event.client_id === 'number') event.client_id = options.merchantId
    else if (typeof event.client_id === 'string') event.client_id = String(options.merchantId)
    const data = event.data as Record<string, unknown>
    if ('merchant_id' in data) data.merchant_id = options.merchantId
  }
  if (options.data) event.data = { ...(event.data as object), ...options.data }
  return event
}

/** Gives a cloned sample's `data` its own transaction id and order reference (the samples' ids are constants). */
function freshIds(data: Record<string, unknown>): void {
  const suffix = randomUUID().slice(0, 8)
  if ('transaction_id' in data) data.transaction_id = `txn_${suffix}`
  for (const field of ['external_id', 'transaction_external_id']) {
    if (typeof data[field] === 'string' && String(data[field]).startsWith('order-')) data[field] = `order-${suffix}`
  }
}
