import {
  createWebhooks,
  type DeadLetterStore,
  EventConflictError,
  HandlerError,
  LAST_TRIES_AFTER_MS,
  memoryStore,
  RETRY_INTERVAL_MS,
  SchemaError,
  SIGNATURE_HEADER,
  StaleEventError,
  transactionSettledSchema,
  type WebhookError,
  type WebhookStore,
  type Webhooks,
} from '@payhooks/core'
import * as v from 'valibot'
import { expect, it } from 'vitest'
import { sampleEvent } from '../samples.js'
import { signedDelivery } from '../signing.js'
import type { ContractEvent, Fleet } from './types.js'

export const SECRET = 'whsec_dead_letter_contract'
const HOUR = RETRY_INTERVAL_MS
const silent = { error() {} }

/** `transaction_settled` with `settlement_amount` as a decimal string, which the built-in schema refuses. */
const amountAsString = (id: string, createdAt?: string) =>
  sampleEvent('transaction_settled', { eventId: id, createdAt, data: { settlement_amount: '10.30' } }) as ContractEvent

/** The schema fixed for {@link amountAsString}: the amount as a number or a decimal string. */
const fixedSchemas = {
  transaction_settled: v.looseObject({
    ...transactionSettledSchema.entries,
    data: v.looseObject({
      ...transactionSettledSchema.entries.data.entries,
      settlement_amount: v.union([v.number(), v.pipe(v.string(), v.decimal(), v.transform(Number))]),
    }),
  }),
}

async function deliver(webhooks: Pick<Webhooks<unknown>, 'receive'>, body: string, headers: Record<string, string>) {
  const result = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name] })
  return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
}

/**
 * A receiver over `store`, whose handlers count their successful runs and fail while `failing` says so. Its dedupe
 * store is a fresh memory store, unless `dedupe` gives one: a fresh one stands for a store past its retention.
 */
export function receiver(
  store: DeadLetterStore,
  options: { fixed?: boolean; failing?: () => boolean; dedupe?: WebhookStore } = {},
) {
  const runs = new Map<string, number>()
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({
    secret: SECRET,
    store: options.dedupe ?? memoryStore(),
    deadLetters: store,
    logger: silent,
    ...(options.fixed ? { schemas: fixedSchemas } : {}),
  })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => {
    if (options.failing?.()) throw new Error(`ledger down for ${event.event_id}`)
    runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
  })
  // Not closed: that would shut the store down, which the contract does once per instance after the test.
  return { webhooks, errors, runs: (id: string) => runs.get(id) ?? 0 }
}

/**
 * The tests through a receiver over the store: a schema mismatch parked and replayed, a tampered body refused,
 * a handler failure on the service's last tries parked.
 */
export function receiverTests(fleet: (namespace?: string) => Fleet): void {
  it('parks a signed event its schema refuses: 200 parked when durable, 422 otherwise; no handler runs', async () => {
    const store = await fleet()()
    const { webhooks, errors, runs } = receiver(store)
    const { body, headers } = await signedDelivery(amountAsString('evt_refused'), SECRET)
    const answer = await deliver(webhooks, body, headers)
    if (store.durable) {
      expect(answer).toEqual({ status: 200, body: { ok: true, event_id: 'evt_refused', status: 'parked' } })
    } else {
      expect(answer.status).toBe(422)
      expect(answer.body.error).toBe('schema_mismatch')
    }
    expect(runs('evt_refused')).toBe(0)
    expect(errors.map((error) => error.constructor)).toEqual([SchemaError])
    const letter = await webhooks.deadLetters.get('evt_refused')
    expect(letter).toMatchObject({ eventId: 'evt_refused', code: 'schema_mismatch', status: 'parked' })
    expect(letter?.reason).toContain('data.settlement_amount')
    expect(new TextDecoder().decode(letter?.body)).toBe(body)
    expect(letter?.headers[SIGNATURE_HEADER]).toBe(headers[SIGNATURE_HEADER])
  })

  it('replays a parked schema mismatch once the schema is fixed: the handler runs once, a second replay is a duplicate', async () => {
    const instance = fleet()
    const { webhooks: broken } = receiver(await instance(0))
    const { body, headers } = await signedDelivery(amountAsString('evt_fixed'), SECRET)
    await deliver(broken, body, headers)
    expect((await broken.replay('evt_fixed')).status).toBe('failed')

    // The fixed release: a new receiver with the corrected schema, over the same letters.
    const fixed = receiver(await instance(1), { fixed: true })
    expect(await fixed.webhooks.replay('evt_fixed')).toEqual({ eventId: 'evt_fixed', status: 'processed' })
    expect(fixed.runs('evt_fixed')).toBe(1)
    const letter = await fixed.webhooks.deadLetters.get('evt_fixed')
    expect(letter?.status).toBe('replayed')
    expect(letter?.replayedAt).toBeInstanceOf(Date)
    expect(await fixed.webhooks.deadLetters.list()).toEqual([])

    // Handled when the letter says it was replayed.
    expect(await fixed.webhooks.replay('evt_fixed')).toEqual({
      eventId: 'evt_fixed',
      status: 'duplicate',
      handledAt: letter?.replayedAt,
    })
    expect(await fixed.webhooks.replayAll()).toEqual([])
    expect(fixed.runs('evt_fixed')).toBe(1)
  })

  it('refuses to replay a stored body altered after parking, and runs nothing', async () => {
    const store = await fleet()()
    const { body, headers } = await signedDelivery(amountAsString('evt_tampered'), SECRET)
    const altered = new TextEncoder().encode(body.replace('"10.30"', '"99999.30"'))
    expect(altered.length).toBe(new TextEncoder().encode(body).length + 3)
    // The letter as the store would hold it had its bytes been altered there: the signature is of the original.
    await store.park({
      eventId: 'evt_tampered',
      eventType: 'transaction_settled',
      body: altered,
      headers,
      code: 'schema_mismatch',
      reason: 'transaction_settled evt_tampered does not match its schema',
      createdAt: undefined,
      parkedAt: new Date(),
    })

    const fixed = receiver(store, { fixed: true })
    const outcome = await fixed.webhooks.replay('evt_tampered')
    expect(outcome.status).toBe('failed')
    expect(outcome.status === 'failed' && outcome.error.code).toBe('invalid_signature')
    expect(fixed.runs('evt_tampered')).toBe(0)
    expect((await store.get('evt_tampered'))?.status).toBe('parked')
  })

  it('parks a handler failure on an event signed over 71 hours ago; a younger one is answered 500 as before', async () => {
    const store = await fleet()()
    let failing = true
    const { webhooks, errors, runs } = receiver(store, { failing: () => failing })
    const old = sampleEvent('transaction_settled', {
      eventId: 'evt_last_tries',
      createdAt: new Date(Date.now() - (LAST_TRIES_AFTER_MS + HOUR / 2)).toISOString(),
    })
    const young = sampleEvent('transaction_settled', {
      eventId: 'evt_young',
      createdAt: new Date(Date.now() - HOUR).toISOString(),
    })
    const oldDelivery = await signedDelivery(old, SECRET)
    const youngDelivery = await signedDelivery(young, SECRET)

    const oldAnswer = await deliver(webhooks, oldDelivery.body, oldDelivery.headers)
    if (store.durable) {
      expect(oldAnswer).toEqual({ status: 200, body: { ok: true, event_id: 'evt_last_tries', status: 'parked' } })
    } else {
      expect(oldAnswer.status).toBe(500)
    }
    const youngAnswer = await deliver(webhooks, youngDelivery.body, youngDelivery.headers)
    expect(youngAnswer.status).toBe(500)
    expect(youngAnswer.body.error).toBe('handler_failed')
    expect(errors.map((error) => error.constructor)).toEqual([HandlerError, HandlerError])

    const letter = await store.get('evt_last_tries')
    expect(letter).toMatchObject({ code: 'handler_failed', status: 'parked' })
    expect(letter?.reason).toContain('ledger down for evt_last_tries')
    expect(letter?.createdAt?.toISOString()).toBe(old.created_at)
    expect(await store.get('evt_young')).toBeUndefined()

    failing = false
    expect(await webhooks.replay('evt_last_tries')).toEqual({ eventId: 'evt_last_tries', status: 'processed' })
    expect(runs('evt_last_tries')).toBe(1)
  })

  it('never runs a replayed event again: a later old copy, past the dedupe store, is a duplicate; replayAll skips it', async () => {
    const store = await fleet()()
    const old = sampleEvent('transaction_settled', {
      eventId: 'evt_outage',
      createdAt: new Date(Date.now() - 80 * HOUR).toISOString(),
    })
    const { body, headers } = await signedDelivery(old, SECRET)
    const first = receiver(store)
    await deliver(first.webhooks, body, headers)
    expect(await first.webhooks.deadLetters.replayAll({ code: 'stale_event' })).toEqual([
      { eventId: 'evt_outage', status: 'processed' },
    ])
    const replayed = await store.get('evt_outage')
    expect(replayed).toMatchObject({ status: 'replayed', code: 'stale_event' })

    // Later: the dedupe store has forgotten the event (a fresh one), and the same delivery comes again.
    const later = receiver(store)
    expect(await deliver(later.webhooks, body, headers)).toEqual({
      status: 200,
      body: { ok: true, event_id: 'evt_outage', status: 'duplicate' },
    })
    expect(later.errors).toEqual([])
    expect(await store.get('evt_outage')).toEqual(replayed)
    expect(await later.webhooks.deadLetters.replayAll({ code: 'stale_event' })).toEqual([])
    expect(await later.webhooks.deadLetters.replay('evt_outage')).toEqual({
      eventId: 'evt_outage',
      status: 'duplicate',
      handledAt: replayed?.replayedAt,
    })
    expect(first.runs('evt_outage') + later.runs('evt_outage')).toBe(1)
  })

  it('keeps the first bytes of a parked old event: a copy with other bytes is reported as an EventConflictError', async () => {
    const store = await fleet()()
    const createdAt = new Date(Date.now() - 80 * HOUR).toISOString()
    const settled = (amount: number) =>
      sampleEvent('transaction_settled', { eventId: 'evt_copies', createdAt, data: { settlement_amount: amount } })
    const first = await signedDelivery(settled(10.3), SECRET)
    const other = await signedDelivery(settled(999), SECRET)
    const { webhooks, errors } = receiver(store)
    await deliver(webhooks, first.body, first.headers)
    const parked = await store.get('evt_copies')

    const answer = await deliver(webhooks, other.body, other.headers)
    if (store.durable) {
      expect(answer).toEqual({ status: 200, body: { ok: true, event_id: 'evt_copies', status: 'duplicate' } })
    } else {
      expect(answer.status).toBe(422)
    }
    expect(await store.get('evt_copies')).toEqual(parked)
    expect(new TextDecoder().decode(parked?.body)).toBe(first.body)
    const conflicts = errors.filter((error) => error instanceof EventConflictError)
    expect(conflicts).toHaveLength(1)
    expect(conflicts[0]).toMatchObject({ code: 'event_conflict', status: 200, eventId: 'evt_copies', parked: true })
    expect(errors.filter((error) => error instanceof StaleEventError)).toHaveLength(store.durable ? 1 : 2)

    // Replayed, then a copy with other bytes again (past the dedupe store): a duplicate, and a conflict reported.
    let amount: unknown
    webhooks.on('transaction_settled', (event) => {
      amount = event.data.settlement_amount
    })
    expect((await webhooks.deadLetters.replay('evt_copies')).status).toBe('processed')
    expect(amount).toBe(10.3)
    const later = receiver(store)
    expect(await deliver(later.webhooks, other.body, other.headers)).toEqual({
      status: 200,
      body: { ok: true, event_id: 'evt_copies', status: 'duplicate' },
    })
    expect(later.errors).toEqual([expect.any(EventConflictError)])
    expect(later.errors[0]).toMatchObject({ parked: false, inProgress: false })
    expect(later.runs('evt_copies')).toBe(0)
  })
}
