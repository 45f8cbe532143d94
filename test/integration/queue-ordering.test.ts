// Queue mode with ordering rules on a real Redis (issue 40, item 4): the second event of a held ordering key is handed
// the key when the holder's run ends, not when the holder's lease would have ended.
import { jobIdFor } from '@payhooks/bullmq'
import type { Webhooks, WebhooksOptions } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { gate } from '../../packages/core/src/test-helpers/index.js'
import { runCleanups, SECRET, setup, until } from '../fixtures/queue-mode.js'

afterEach(runCleanups)

const LEASE_MS = 30_000

function orderedSetup() {
  const byTransaction = { key: (e: { data: { transaction_id: string } }) => e.data.transaction_id }
  const at = (e: { data: { settlement_date: string } }) => e.data.settlement_date
  const ordering = { transaction_settled: { ...byTransaction, at }, transaction_returned: { ...byTransaction, at } }
  return setup({}, { leaseMs: LEASE_MS, ordering } as Partial<WebhooksOptions>)
}

async function deliver(
  webhooks: { receive: Webhooks<unknown>['receive'] },
  type: string,
  eventId: string,
  txn: string,
) {
  const event = sampleEvent(type, { eventId, data: { transaction_id: txn, settlement_date: '2026-11-27' } })
  const { body, headers } = await signedDelivery(event, SECRET)
  const result = await webhooks.receive({
    method: 'POST',
    body,
    getHeader: (name) => headers[name as keyof typeof headers],
  })
  return result.status
}

describe('queue mode with ordering rules', () => {
  it("hands a held ordering key to the waiting event when the holder's run ends, not when its lease would (issue 40)", async () => {
    const { webhooks, worker, errors, inspect } = orderedSetup()
    await worker.ready()
    const handled: string[] = []
    let holderStarted = false
    let holderDone = 0
    // The holder runs until the waiting event was put back to wait for the key (a fixed run of 400 ms could end
    // first on a loaded machine).
    const endRun = gate()
    webhooks.on('transaction_settled', async (event) => {
      holderStarted = true
      await endRun.promise
      handled.push(event.event_id)
      holderDone = Date.now()
    })
    webhooks.on('transaction_returned', (event) => {
      handled.push(event.event_id)
    })

    expect(await deliver(webhooks, 'transaction_settled', 'evt_order_settled', 'txn_order_1')).toBe(200)
    await until(() => holderStarted, 'the holder to start')
    // Out of order: the return arrives while the settlement still holds the key; it waits for it.
    expect(await deliver(webhooks, 'transaction_returned', 'evt_order_returned', 'txn_order_1')).toBe(200)
    const waiter = jobIdFor('evt_order_returned')
    await until(async () => (await inspect.getJobState(waiter)) === 'delayed', 'the return to wait for its key')
    expect(holderDone).toBe(0)
    endRun.open()

    // Soon after the holder's run ended: a few Redis round trips, which a loaded machine may stretch to seconds, but
    // not near the holder's lease (30 s), 5x past the bound.
    const bound = LEASE_MS / 5
    await until(async () => (await inspect.getJobState(waiter)) === 'completed', 'the return to be handled', bound)
    const waited = Date.now() - holderDone
    console.info(`[queue ordering] the waiting event completed ${waited} ms after the holder's run ended`)
    expect(waited).toBeLessThan(bound)
    expect(handled).toEqual(['evt_order_settled', 'evt_order_returned'])
    expect(errors).toEqual([])
  })
})
