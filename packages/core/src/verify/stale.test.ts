import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { type DeadLetterStore, memoryDeadLetterStore } from '../dead-letters/index.js'
import { EventConflictError, StaleEventError, type WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookStore } from '../store.js'
import { gate } from '../test-helpers/index.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_stale_unit'
const HOUR = 3_600_000
const DAY = 24 * HOUR

/** A transaction_settled event signed `ageMs` ago: a manual resend after an outage of that long. */
async function resend(eventId: string, ageMs: number) {
  const event = sampleEvent('transaction_settled', { eventId, createdAt: new Date(Date.now() - ageMs).toISOString() })
  const { body, headers } = await signedDelivery(event, secret)
  return { method: 'POST', body, getHeader: (name: string) => (headers as Record<string, string>)[name] }
}

function receiver(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const runs: string[] = []
  const warnings: string[] = []
  const logger = { warn: (message: string) => warnings.push(message), error() {} }
  const webhooks = createWebhooks({ secret, logger, ...options } as WebhooksOptions)
  webhooks.onError((error) => errors.push(error))
  webhooks.on('transaction_settled', (event) => {
    runs.push(event.event_id)
  })
  return { webhooks, errors, runs, warnings }
}

/** A memory dead-letter store that says it is durable, standing for Redis or PostgreSQL. */
function durableLetters(): DeadLetterStore & { memory: ReturnType<typeof memoryDeadLetterStore> } {
  const memory = memoryDeadLetterStore()
  return {
    memory,
    durable: true,
    park: (event) => memory.park(event),
    get: (eventId) => memory.get(eventId),
    list: (query) => memory.list(query),
    markReplayed: (eventId, at) => memory.markReplayed(eventId, at),
  }
}

const body = (answer: { body: string }) => JSON.parse(answer.body) as Record<string, unknown>

describe('an event older than maxEventAgeMs', () => {
  it('is never acknowledged unhandled: 422 stale_event on every resend without a dead-letter store', async () => {
    const { webhooks, errors, runs } = receiver()
    for (let attempt = 0; attempt < 2; attempt++) {
      const answer = await webhooks.receive(await resend('evt_outage', 75 * HOUR))
      expect(answer.status).toBe(422)
      expect(body(answer)).toEqual({
        error: 'stale_event',
        message: 'event older than this receiver accepts and not handled before; not acknowledged',
      })
    }
    expect(runs).toEqual([])
    expect(errors.map((e) => [e.constructor, e.status, e.eventId])).toEqual([
      [StaleEventError, 422, 'evt_outage'],
      [StaleEventError, 422, 'evt_outage'],
    ])
    // The age in hours, as the service's retry window is counted.
    expect(errors[0]?.message).toMatch(
      /^transaction_settled evt_outage created at \S+ is 75 h old, older than maxEventAgeMs/,
    )
  })

  it('is a duplicate (200) when the store knows it as handled', async () => {
    const store = memoryStore()
    // Handled by a receiver that checks no age (the first delivery, as far as the store is concerned).
    const first = receiver({ store, maxEventAgeMs: Number.POSITIVE_INFINITY })
    const delivery = await resend('evt_known', 75 * HOUR)
    expect(body(await first.webhooks.receive(delivery)).status).toBe('processed')
    const { webhooks, errors, runs } = receiver({ store })

    const answer = await webhooks.receive(delivery)

    expect(answer.status).toBe(200)
    expect(body(answer)).toEqual({ ok: true, event_id: 'evt_known', status: 'duplicate' })
    expect(runs).toEqual([])
    expect(errors).toEqual([])
  })

  it('is parked in a durable dead-letter store (200 parked, code stale_event), and its replay runs the handlers once', async () => {
    const deadLetters = durableLetters()
    const { webhooks, errors, runs } = receiver({ deadLetters })

    const answer = await webhooks.receive(await resend('evt_park', 75 * HOUR))

    expect(answer.status).toBe(200)
    expect(body(answer)).toEqual({ ok: true, event_id: 'evt_park', status: 'parked' })
    expect(runs).toEqual([])
    expect(errors.map((e) => e.code)).toEqual(['stale_event'])
    // onError is told what the service got: 200 parked, not the error's own 422.
    expect(errors[0]).toMatchObject({ status: 422, parked: true, answered: { status: 200, code: 'parked' } })
    expect(deadLetters.memory.get('evt_park')).toMatchObject({
      code: 'stale_event',
      status: 'parked',
      reason: expect.stringMatching(/older than maxEventAgeMs, and not handled before/),
    })
    // The claim taken to ask the store was released: the replay runs the event, once.
    expect(await webhooks.replay('evt_park')).toEqual({ eventId: 'evt_park', status: 'processed' })
    // The second replay says when the first handled it (the letter's replayedAt).
    const first = (await deadLetters.memory.get('evt_park'))?.replayedAt
    expect(await webhooks.replay('evt_park')).toEqual({ eventId: 'evt_park', status: 'duplicate', handledAt: first })
    expect(body(await webhooks.receive(await resend('evt_park', 76 * HOUR))).status).toBe('duplicate')
    expect(runs).toEqual(['evt_park'])
    expect(await webhooks.deadLetters.list({ code: 'stale_event', status: 'replayed' })).toHaveLength(1)
  })

  it('is parked but answered 422 with a dead-letter store that is not durable', async () => {
    const deadLetters = memoryDeadLetterStore()
    const { webhooks, runs, errors } = receiver({ deadLetters })

    const answer = await webhooks.receive(await resend('evt_memory', 75 * HOUR))

    expect(answer.status).toBe(422)
    expect(errors[0]).toMatchObject({ status: 422, parked: true })
    expect(errors[0]?.answered).toBeUndefined()
    expect(body(answer).error).toBe('stale_event')
    expect(deadLetters.get('evt_memory')?.code).toBe('stale_event')
    expect(await webhooks.replay('evt_memory')).toEqual({ eventId: 'evt_memory', status: 'processed' })
    expect(runs).toEqual(['evt_memory'])
  })

  it('in queue mode, is refused or a duplicate before anything is queued', async () => {
    const store = memoryStore()
    const queued: string[] = []
    const queue = {
      enqueue: async (event: { event_id: string }) => {
        queued.push(event.event_id)
      },
    }
    const { webhooks, runs } = receiver({ store, queue })
    expect((await webhooks.receive(await resend('evt_queued_old', 75 * HOUR))).status).toBe(422)
    const token = store.claim('evt_queued_done', 60_000)
    if (token.status === 'claimed') store.complete('evt_queued_done', token.token)
    expect(body(await webhooks.receive(await resend('evt_queued_done', 75 * HOUR))).status).toBe('duplicate')
    expect(body(await webhooks.receive(await resend('evt_queued_new', HOUR))).status).toBe('queued')
    expect(queued).toEqual(['evt_queued_new'])
    expect(runs).toEqual([])
  })

  it('is answered 409 while another delivery holds its claim, and 503 when the store cannot be asked', async () => {
    const store = memoryStore()
    const held = store.claim('evt_held', 60_000)
    const { webhooks, runs } = receiver({ store })
    const busy = await webhooks.receive(await resend('evt_held', 75 * HOUR))
    expect(busy.status).toBe(409)
    expect(held.status).toBe('claimed')

    const broken: WebhookStore = {
      ...memoryStore(),
      claim() {
        throw new Error('connection refused')
      },
    }
    const down = receiver({ store: broken })
    const answer = await down.webhooks.receive(await resend('evt_down', 75 * HOUR))
    expect(answer.status).toBe(503)
    expect(body(answer).error).toBe('store_unavailable')
    expect(down.errors.map((e) => e.code)).toEqual(['store_unavailable'])
    expect(runs).toEqual([])
  })

  it('keeps the claim while it is being parked, so a concurrent copy cannot run it meanwhile', async () => {
    const parking = gate()
    const letters = durableLetters()
    const deadLetters: DeadLetterStore = {
      ...letters,
      async park(event) {
        await parking.promise
        letters.memory.park(event)
      },
    }
    const { webhooks, runs } = receiver({ deadLetters, maxEventAgeMs: 74 * HOUR })
    const first = webhooks.receive(await resend('evt_race', 75 * HOUR))
    await new Promise((resolve) => setTimeout(resolve, 10))
    const copy = await webhooks.receive(await resend('evt_race', 75 * HOUR))
    expect(copy.status).toBe(409)
    parking.open()
    expect((await first).status).toBe(200)
    expect(runs).toEqual([])
  })
})

describe('the log line of a parked event (no onError listener)', () => {
  async function logged(deadLetters: DeadLetterStore) {
    const lines: { fields: Record<string, unknown>; message: string }[] = []
    const logger = {
      info() {},
      warn() {},
      error: (fields: Record<string, unknown>, message: string) => lines.push({ fields, message }),
    }
    const webhooks = createWebhooks({ secret, logger, deadLetters })
    webhooks.on('transaction_settled', () => {})
    await webhooks.receive(await resend('evt_logged', 75 * HOUR))
    return lines
  }

  it('says it was parked and answered 200 parked, with a durable store', async () => {
    const [line] = await logged(durableLetters())
    expect(line?.message).toMatch(
      /^\[payhooks\] 422 stale_event: transaction_settled evt_logged .* handlers not run .*; parked \(answered 200 parked\)$/,
    )
    expect(line?.fields).toMatchObject({ code: 'stale_event', status: 200, answered_code: 'parked', parked: true })
  })

  it('says it was parked but not acknowledged, with a store that is not durable', async () => {
    const [line] = await logged(memoryDeadLetterStore())
    expect(line?.message).toMatch(
      /^\[payhooks\] 422 stale_event: .*; parked, not acknowledged \(the dead-letter store is not durable\)$/,
    )
    expect(line?.fields).toMatchObject({ code: 'stale_event', status: 422, parked: true })
  })
})

describe('an old copy with other bytes', () => {
  it('of a handled event is a duplicate reported as an EventConflictError, as on the fresh path', async () => {
    const store = memoryStore()
    const first = receiver({ store, maxEventAgeMs: Number.POSITIVE_INFINITY })
    const handled = await resend('evt_old_copy', 75 * HOUR)
    expect(body(await first.webhooks.receive(handled)).status).toBe('processed')
    const { webhooks, errors, runs } = receiver({ store })

    // Signed a millisecond later: other bytes under the same event_id.
    const other = await resend('evt_old_copy', 75 * HOUR - 1)
    const answer = await webhooks.receive(other)

    expect(answer.status).toBe(200)
    expect(body(answer)).toEqual({ ok: true, event_id: 'evt_old_copy', status: 'duplicate' })
    expect(runs).toEqual([])
    expect(errors).toEqual([expect.any(EventConflictError)])
    expect(errors[0]).toMatchObject({ code: 'event_conflict', status: 200, inProgress: false, parked: false })
    expect((errors[0] as EventConflictError).handledDigest).not.toBe((errors[0] as EventConflictError).receivedDigest)
  })

  it('of a parked letter leaves the first bytes parked: a duplicate, reported as an EventConflictError', async () => {
    const deadLetters = durableLetters()
    const { webhooks, errors, runs } = receiver({ deadLetters })
    const first = await resend('evt_old_parked', 75 * HOUR)
    expect(body(await webhooks.receive(first)).status).toBe('parked')
    const parked = deadLetters.memory.get('evt_old_parked')

    const answer = await webhooks.receive(await resend('evt_old_parked', 75 * HOUR - 1))

    expect(body(answer)).toEqual({ ok: true, event_id: 'evt_old_parked', status: 'duplicate' })
    expect(new TextDecoder().decode(deadLetters.memory.get('evt_old_parked')?.body)).toBe(first.body)
    expect(deadLetters.memory.get('evt_old_parked')).toEqual(parked)
    expect(errors.map((e) => e.constructor)).toEqual([StaleEventError, EventConflictError])
    expect(errors[1]).toMatchObject({ status: 200, parked: true })
    expect(errors[1]?.message).toMatch(/other than the one parked .*the parked bytes kept/)
    expect(runs).toEqual([])
  })
})

describe('a transaction_returned, which has no created_at', () => {
  async function returned(eventId: string, settlementDate: string) {
    const event = sampleEvent('transaction_returned', { eventId, createdAt: settlementDate })
    expect(event).not.toHaveProperty('created_at')
    const { body, headers } = await signedDelivery(event, secret)
    return { method: 'POST', body, getHeader: (name: string) => (headers as Record<string, string>)[name] }
  }

  it('is aged by its signed settlement_date: a captured copy past the retention is not run again', async () => {
    const { webhooks, errors } = receiver()
    const runs: string[] = []
    webhooks.on('transaction_returned', (event) => {
      runs.push(event.event_id)
    })
    const fresh = await returned('evt_returned_fresh', new Date(Date.now() - HOUR).toISOString())
    expect(body(await webhooks.receive(fresh)).status).toBe('processed')

    // Replayed after the store forgot it (a fresh receiver and store): refused, not run a second time.
    const captured = await returned('evt_returned_old', new Date(Date.now() - 75 * HOUR).toISOString())
    const later = receiver()
    later.webhooks.on('transaction_returned', (event) => {
      runs.push(event.event_id)
    })
    const answer = await later.webhooks.receive(captured)
    expect(answer.status).toBe(422)
    expect(body(answer).error).toBe('stale_event')
    expect(later.errors).toEqual([expect.any(StaleEventError)])
    expect(later.errors[0]).toMatchObject({ timeField: 'settlement_date' })
    expect(later.errors[0]?.message).toMatch(/^transaction_returned evt_returned_old with settlement_date /)
    expect(runs).toEqual(['evt_returned_fresh'])
    expect(errors).toEqual([])
  })

  it('dated ahead of the clock is not refused: the date is the processor’s, not the sender’s clock', async () => {
    const { webhooks, errors } = receiver()
    const ahead = await returned('evt_returned_ahead', new Date(Date.now() + 2 * HOUR).toISOString())
    expect(body(await webhooks.receive(ahead)).status).toBe('processed')
    expect(errors).toEqual([])
  })
})

describe('maxEventAgeMs and the store retention', () => {
  it("defaults to the store's retentionMs: a store kept for 7 days runs a 75-hour-old resend", async () => {
    const store = memoryStore({ retentionMs: 7 * DAY })
    expect(store.retentionMs).toBe(7 * DAY)
    const { webhooks, runs, warnings } = receiver({ store })

    expect(body(await webhooks.receive(await resend('evt_week', 75 * HOUR))).status).toBe('processed')
    expect(body(await webhooks.receive(await resend('evt_week', 75 * HOUR))).status).toBe('duplicate')
    expect((await webhooks.receive(await resend('evt_older', 7 * DAY + HOUR))).status).toBe(422)
    expect(runs).toEqual(['evt_week'])
    expect(warnings).toEqual([])
  })

  it('is 73 hours for a store that does not say its retention', async () => {
    const plain = memoryStore()
    const store: WebhookStore = {
      claim: (id, lease) => plain.claim(id, lease),
      extend: (id, token, lease) => plain.extend(id, token, lease),
      complete: (id, token) => plain.complete(id, token),
      release: (id, token) => plain.release(id, token),
    }
    expect(store).not.toHaveProperty('retentionMs')
    const { webhooks } = receiver({ store })
    expect((await webhooks.receive(await resend('evt_72', 72 * HOUR + 30 * 60_000))).status).toBe(200)
    expect((await webhooks.receive(await resend('evt_74', 74 * HOUR))).status).toBe(422)
  })

  it("warns at start when maxEventAgeMs is longer than the store's retention", () => {
    const { warnings } = receiver({ store: memoryStore(), maxEventAgeMs: 7 * DAY })
    expect(warnings).toEqual([
      expect.stringMatching(
        /^\[payhooks\] maxEventAgeMs \(604800000 ms\) is longer than the store's retentionMs \(262800000 ms\): .* would run its handlers twice/,
      ),
    ])
    expect(receiver({ store: memoryStore({ retentionMs: 7 * DAY }), maxEventAgeMs: 7 * DAY }).warnings).toEqual([])
  })
})
