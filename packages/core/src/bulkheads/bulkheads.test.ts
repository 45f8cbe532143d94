// Bulkheads between event types (issue 47): each type's share of maxConcurrentEvents, runs overrunning deadlineMs
// counted at once, and the quarantine of a type whose runs fill its share, lifted when one of them settles.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import { memoryDeadLetterStore } from '../dead-letters/index.js'
import type { WebhookError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { createWebhooks } from '../receiver/create.js'
import { gate, recorder } from '../test-helpers/index.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_bulkheads'
const HOURS = 3_600_000

function setup(options: Partial<WebhooksOptions> = {}) {
  const { logger, calls } = recorder()
  const webhooks = createWebhooks({ secret, store: memoryStore(), checkAtStart: false, logger, ...options })
  const errors: WebhookError[] = []
  webhooks.onError((error) => void errors.push(error))
  /** Handler runs per event id; an id in `hang` waits for its gate, ignoring its signal. */
  const runs = new Map<string, number>()
  const hang = new Map<string, ReturnType<typeof gate>>()
  webhooks.onAny(async (event) => {
    runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
    await hang.get(event.event_id)?.promise
  })
  return { webhooks, errors, runs, hang, calls }
}

type Receiver = ReturnType<typeof setup>['webhooks']

/** Delivers an event of `type` with id `eventId`: its status and answer code. */
async function deliver(webhooks: Receiver, type: string, eventId: string, createdAt?: string) {
  const { body, headers } = await signedDelivery(sampleEvent(type, { eventId, createdAt }), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  const answer = await webhooks.receive({ method: 'POST', body, getHeader })
  return { status: answer.status, error: (JSON.parse(answer.body) as { error?: string }).error }
}

/** Starts delivering and holds its handler: the delivery's answer comes once its gate opens (or at the deadline). */
function hanging(setupOf: ReturnType<typeof setup>, type: string, eventId: string) {
  const held = gate()
  setupOf.hang.set(eventId, held)
  return { answer: deliver(setupOf.webhooks, type, eventId), open: held.open }
}

const waitFor = (check: () => void) => vi.waitFor(check, { timeout: 10_000, interval: 10 })

describe('bulkheads: a share of the slots per event type', () => {
  it('keeps a type within half the slots: its next delivery waits for its own, while another type runs', async () => {
    const receiver = setup({ maxConcurrentEvents: 4, deadlineMs: 5000 })
    const { webhooks, runs } = receiver
    const first = hanging(receiver, 'transaction_settled', 'evt_s1')
    const second = hanging(receiver, 'transaction_settled', 'evt_s2')
    await waitFor(() => expect(runs.size).toBe(2))
    const third = deliver(webhooks, 'transaction_settled', 'evt_s3')
    // Two slots are free, but not for this type: it waits, nothing claimed.
    expect(await deliver(webhooks, 'transaction_returned', 'evt_r1')).toEqual({ status: 200, error: undefined })
    expect(runs.has('evt_s3')).toBe(false)
    expect(webhooks.stats().waiting).toBe(1)
    first.open()
    expect(await third).toEqual({ status: 200, error: undefined })
    second.open()
    expect((await Promise.all([first.answer, second.answer])).map((a) => a.status)).toEqual([200, 200])
    expect(runs.get('evt_s3')).toBe(1)
    await webhooks.close()
  })

  it('answers 503 busy, nothing claimed, a delivery whose type holds its share until the deadline', async () => {
    const receiver = setup({ maxConcurrentEvents: 4, deadlineMs: 150 })
    const { webhooks, runs, errors } = receiver
    const first = hanging(receiver, 'transaction_settled', 'evt_b1')
    const second = hanging(receiver, 'transaction_settled', 'evt_b2')
    await waitFor(() => expect(runs.size).toBe(2))
    expect(await deliver(webhooks, 'transaction_settled', 'evt_b3')).toEqual({ status: 503, error: 'busy' })
    expect(runs.has('evt_b3')).toBe(false)
    expect(errors.find((error) => error.eventId === 'evt_b3')?.message).toBe(
      'no free slot among the 2 of maxConcurrentEvents (4) its type may hold (bulkheads) before the deadline for transaction_settled evt_b3; nothing claimed or run',
    )
    first.open()
    second.open()
    await Promise.all([first.answer, second.answer])
    await webhooks.close()
  })

  it('gives the types of perType their own number of slots, and lets one type take them all with share: 1', async () => {
    const receiver = setup({ maxConcurrentEvents: 4, bulkheads: { perType: { transaction_settled: 3 } } })
    const held = ['evt_p1', 'evt_p2', 'evt_p3', 'evt_p4'].map((id) => hanging(receiver, 'transaction_settled', id))
    await waitFor(() => expect(receiver.runs.size).toBe(3))
    expect(receiver.runs.has('evt_p4')).toBe(false)
    for (const one of held) one.open()
    await Promise.all(held.map((one) => one.answer))
    expect(receiver.runs.get('evt_p4')).toBe(1)

    const whole = setup({ maxConcurrentEvents: 4, bulkheads: { share: 1 } })
    const all = ['evt_w1', 'evt_w2', 'evt_w3', 'evt_w4'].map((id) => hanging(whole, 'transaction_settled', id))
    await waitFor(() => expect(whole.runs.size).toBe(4))
    for (const one of all) one.open()
    await Promise.all(all.map((one) => one.answer))
    await Promise.all([receiver.webhooks.close(), whole.webhooks.close()])
  })

  it('refuses options that cannot be shares', () => {
    const make = (bulkheads: unknown) =>
      createWebhooks({ secret, maxConcurrentEvents: 4, checkAtStart: false, bulkheads: bulkheads as false })
    expect(() => make({ share: 0 })).toThrow('createWebhooks: bulkheads.share must be above 0 and at most 1')
    expect(() => make({ share: 1.5 })).toThrow(RangeError)
    expect(() => make({ perType: { transaction_settled: 5 } })).toThrow(
      'createWebhooks: bulkheads.perType.transaction_settled must be at most maxConcurrentEvents',
    )
    expect(() => make({ perType: { transaction_settled: 1.5 } })).toThrow(RangeError)
    expect(() => make({ quarantineAfter: 0 })).toThrow('createWebhooks: bulkheads.quarantineAfter must be')
    expect(() => make('half')).toThrow(TypeError)
    expect(() => make(false)).not.toThrow()
    expect(() => make({ quarantineAfter: Number.POSITIVE_INFINITY })).not.toThrow()
  })
})

describe('bulkheads: runs overrunning deadlineMs', () => {
  it('count at once in stats() and health(), long before maxRunMs makes them hung', async () => {
    const receiver = setup({ deadlineMs: 100, maxRunMs: 600_000 })
    const { webhooks } = receiver
    const held = hanging(receiver, 'transaction_settled', 'evt_late')
    const before = Date.now()
    expect(await held.answer).toEqual({ status: 503, error: 'deadline_exceeded' })
    await waitFor(() => expect(webhooks.stats().overrunning.count).toBe(1))
    const { overrunning, hung } = webhooks.stats()
    expect(hung.count).toBe(0)
    expect(overrunning.oldest).toMatchObject({ eventId: 'evt_late', eventType: 'transaction_settled' })
    expect(overrunning.oldest?.since.getTime()).toBeGreaterThanOrEqual(before + 100)
    const report = await webhooks.health()
    expect(report.ready).toBe(true)
    expect(report.checks.find((check) => check.name === 'overrunning_handlers')).toMatchObject({
      ok: false,
      severity: 'warning',
      detail: `1 run still running past deadlineMs (100 ms); the oldest, transaction_settled evt_late, since ${overrunning.oldest?.since.toISOString()}`,
    })
    held.open()
    await waitFor(() => expect(webhooks.stats().overrunning).toEqual({ count: 0, oldest: null }))
    expect((await webhooks.health()).checks.map((check) => check.name)).not.toContain('overrunning_handlers')
    await webhooks.close()
  })
})

describe('bulkheads: quarantine', () => {
  it('quarantines a type whose share is full of overrunning runs, refuses it at once while the others flow, and lifts when one settles', async () => {
    // A 1 s deadline: the refusal below comes at once, and a loaded machine still answers it well before then.
    const receiver = setup({ maxConcurrentEvents: 4, deadlineMs: 1000, maxRunMs: 600_000 })
    const { webhooks, errors, runs, calls } = receiver
    const first = hanging(receiver, 'transaction_settled', 'evt_q1')
    const second = hanging(receiver, 'transaction_settled', 'evt_q2')
    await waitFor(() => expect(webhooks.stats().quarantined).toHaveLength(1))
    const started = errors.filter((error) => error.code === 'quarantined')
    expect(started).toHaveLength(1)
    expect(started[0]).toMatchObject({ status: 503, eventType: 'transaction_settled', started: true, overrunning: 2 })
    expect(webhooks.stats().quarantined[0]).toMatchObject({
      eventType: 'transaction_settled',
      overrunning: 2,
      slots: 2,
    })

    const refusedAt = Date.now()
    expect(await deliver(webhooks, 'transaction_settled', 'evt_q3')).toEqual({ status: 503, error: 'quarantined' })
    expect(Date.now() - refusedAt).toBeLessThan(1000) // at once, not at the deadline
    expect(runs.has('evt_q3')).toBe(false)
    expect(errors.at(-1)).toMatchObject({ code: 'quarantined', eventId: 'evt_q3', started: false })
    // A copy of an event still running here is in progress, not refused as its type.
    expect(await deliver(webhooks, 'transaction_settled', 'evt_q1')).toEqual({ status: 409, error: 'in_progress' })
    await expect(
      webhooks.dispatch(sampleEvent('transaction_settled', { eventId: 'evt_q4' }) as never),
    ).rejects.toMatchObject({ code: 'quarantined' })
    expect(await deliver(webhooks, 'transaction_returned', 'evt_r2')).toEqual({ status: 200, error: undefined })
    const report = await webhooks.health()
    expect(report.ready).toBe(true)
    expect(report.checks.find((check) => check.name === 'quarantined_types')).toMatchObject({
      ok: false,
      severity: 'warning',
    })

    first.open()
    await waitFor(() => expect(webhooks.stats().quarantined).toEqual([]))
    expect(calls.find((call) => (call.fields as { code?: string }).code === 'quarantine_lifted')).toMatchObject({
      level: 'warn',
    })
    expect(await deliver(webhooks, 'transaction_settled', 'evt_q3')).toEqual({ status: 200, error: undefined })
    expect(runs.get('evt_q3')).toBe(1)
    second.open()
    await Promise.all([first.answer, second.answer])
    await webhooks.close()
  })

  it('quarantines after quarantineAfter overrunning runs with maxConcurrentEvents unbounded, and never without it', async () => {
    const receiver = setup({ deadlineMs: 100, bulkheads: { quarantineAfter: 1 } })
    const held = hanging(receiver, 'transaction_settled', 'evt_u1')
    await waitFor(() => expect(receiver.webhooks.stats().quarantined).toHaveLength(1))
    expect(receiver.webhooks.stats().quarantined[0]?.slots).toBeNull()
    expect(await deliver(receiver.webhooks, 'transaction_settled', 'evt_u2')).toMatchObject({ error: 'quarantined' })

    const unbounded = setup({ deadlineMs: 100 })
    const stuck = ['evt_n1', 'evt_n2', 'evt_n3'].map((id) => hanging(unbounded, 'transaction_settled', id))
    await waitFor(() => expect(unbounded.webhooks.stats().overrunning.count).toBe(3))
    expect(unbounded.webhooks.stats().quarantined).toEqual([])
    for (const one of [held, ...stuck]) one.open()
    await Promise.all([held.answer, ...stuck.map((one) => one.answer)])
    await Promise.all([receiver.webhooks.close(), unbounded.webhooks.close()])
  })

  it("parks a quarantined type's event on the service's last tries, never acknowledging it without a durable store", async () => {
    const deadLetters = memoryDeadLetterStore()
    const receiver = setup({ maxConcurrentEvents: 2, deadlineMs: 100, deadLetters })
    const held = hanging(receiver, 'transaction_settled', 'evt_l1')
    await waitFor(() => expect(receiver.webhooks.stats().quarantined).toHaveLength(1))
    const old = new Date(Date.now() - 71.5 * HOURS).toISOString()
    const answer = await deliver(receiver.webhooks, 'transaction_settled', 'evt_l2', old)
    // memoryDeadLetterStore is not durable: kept for a replay, still answered 503 so the service keeps it.
    expect(answer).toEqual({ status: 503, error: 'quarantined' })
    expect(await deadLetters.get('evt_l2')).toMatchObject({ eventType: 'transaction_settled', code: 'handler_failed' })
    expect(receiver.runs.has('evt_l2')).toBe(false)
    held.open()
    await held.answer
    await receiver.webhooks.close()
  })
})
