// The receiver's side of the journal: what it writes, when, under which instance, and that a failing journal never
// touches a delivery's answer.
import { hostname } from 'node:os'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import type { LogFields } from '../logging/log.js'
import { createWebhooks } from '../receiver/create.js'
import type { RawDelivery } from '../types.js'
import { memoryJournal } from './memory.js'
import type { Journal, JournalRecord } from './types.js'

const SECRET = 'whsec_journal_unit'

async function deliver(webhooks: { receive(d: RawDelivery): Promise<{ status: number }> }, event: object) {
  const { body, headers } = await signedDelivery(event, SECRET)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

/** A journal that keeps each batch it is given. */
function batches(fail = false) {
  const written: JournalRecord[][] = []
  const journal: Journal = {
    ...memoryJournal(),
    async write(records) {
      if (fail) throw new Error('journal down')
      written.push([...records])
    },
  }
  return { journal, written }
}

describe('journal', () => {
  it('is opt-in: without one, webhooks.events says so and its reads reject naming the option', async () => {
    const webhooks = createWebhooks({ secret: SECRET, checkAtStart: false })
    expect(webhooks.events.enabled).toBe(false)
    await expect(webhooks.events.get('evt_1')).rejects.toThrow('events: journal must be configured')
  })

  it('writes nothing while the delivery is answered, and the batch after, under the host name and pid', async () => {
    const { journal, written } = batches()
    const webhooks = createWebhooks({ secret: [{ secret: SECRET, label: 'sub_1' }], journal, checkAtStart: false })
    webhooks.on('transaction_settled', () => {})
    const event = sampleEvent('transaction_settled')
    expect((await deliver(webhooks, event)).status).toBe(200)
    expect(written).toEqual([])
    await webhooks.events.flush()
    expect(written).toEqual([
      [
        expect.objectContaining({
          eventId: event.event_id,
          eventType: 'transaction_settled',
          createdAt: event.created_at,
          status: 200,
          outcome: 'processed',
          instance: `${hostname()}:${process.pid}`,
          secretIndex: 0,
          secretLabel: 'sub_1',
        }),
      ],
    ])
  })

  it('journals a signed event refused by its schema, with the refusal as its outcome', async () => {
    const { journal, written } = batches()
    const webhooks = createWebhooks({
      secret: SECRET,
      journal,
      instance: 'web-1',
      checkAtStart: false,
      logger: { error() {} },
    })
    const event = sampleEvent('transaction_settled', { data: { settlement_amount: 'lots' } })
    expect((await deliver(webhooks, event)).status).toBe(422)
    await webhooks.close()
    expect(written.flat().map((r) => [r.eventId, r.status, r.outcome, r.instance])).toEqual([
      [event.event_id, 422, 'schema_mismatch', 'web-1'],
    ])
  })

  it('a journal that fails is logged once a minute, its answers kept to be written again, deliveries answered as before', async () => {
    const { journal } = batches(true)
    const warnings: LogFields[] = []
    const logger = { error() {}, warn: (fields: LogFields) => warnings.push(fields), info() {} }
    const webhooks = createWebhooks({ secret: SECRET, journal, logger: logger as never, checkAtStart: false })
    webhooks.on('transaction_settled', () => {})
    for (let i = 0; i < 3; i++) expect((await deliver(webhooks, sampleEvent('transaction_settled'))).status).toBe(200)
    await webhooks.events.flush()
    await deliver(webhooks, sampleEvent('transaction_settled'))
    await webhooks.events.flush()
    expect(warnings).toEqual([{ code: 'journal_write_failed', waiting: 3 }])
  })

  it('gives the signed created_at as sent (createdAt) and as a Date (createdAtDate), as deadLetters.get gives it', async () => {
    const webhooks = createWebhooks({ secret: SECRET, journal: memoryJournal(), checkAtStart: false })
    webhooks.on('transaction_settled', () => {})
    webhooks.on('transaction_returned', () => {})
    const settled = sampleEvent('transaction_settled')
    const returned = sampleEvent('transaction_returned')
    await deliver(webhooks, settled)
    await deliver(webhooks, returned)
    const timeline = await webhooks.events.get(settled.event_id as string)
    expect(timeline?.createdAt).toBe(settled.created_at)
    expect(timeline?.createdAtDate).toEqual(new Date(settled.created_at as string))
    expect((await webhooks.events.get(returned.event_id as string))?.createdAtDate).toBeNull()
    const { answers } = await webhooks.events.list()
    expect(answers.map((a) => [a.createdAt, a.createdAtDate])).toEqual([
      [null, null],
      [settled.created_at, new Date(settled.created_at as string)],
    ])
    await webhooks.close()
  })

  it('refuses an empty instance name', () => {
    expect(() => createWebhooks({ secret: SECRET, instance: '' })).toThrow(
      'createWebhooks: instance must be a non-empty string',
    )
  })
})
