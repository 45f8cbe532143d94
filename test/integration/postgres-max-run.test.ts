// maxRunMs on postgresStore, whose handlers run inside the store's transaction: a handler hung past it keeps its claim
// and ordering key (the key's next event waits) until it settles; then its writes commit with the done marker.
import { createWebhooks, HandlerTimeoutError, type WebhookError } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { gate, postgresHarness } from '../fixtures/postgres-harness.js'

const secret = 'whsec_postgres_max_run'
const { admin, newPool, tablesOfTest } = postgresHarness()
const dropped: string[] = []
afterAll(async () => {
  for (const name of dropped) await admin.query(`DROP TABLE IF EXISTS ${name}`)
})

const byTransaction = {
  key: (e: { data: { transaction_id: string } }) => e.data.transaction_id,
  at: (e: { data: { settlement_date: string } }) => e.data.settlement_date,
}

async function deliver(webhooks: { receive: (d: never) => Promise<{ status: number }> }, message: object) {
  const { body, headers } = await signedDelivery(JSON.stringify(message), secret)
  const getHeader = (name: string) => (headers as Record<string, string>)[name]
  return (await webhooks.receive({ method: 'POST', body, getHeader } as never)).status
}

describe('postgresStore and maxRunMs', () => {
  it('keeps the claim and ordering key of a hung handler until it settles, then commits its writes', async () => {
    const { store: table, ledger } = await tablesOfTest('event_id text NOT NULL, status text')
    dropped.push(`${table}_fences`)
    const webhooks = createWebhooks({
      secret,
      store: postgresStore(newPool(), { table }),
      ordering: { transaction_settled: byTransaction },
      // Each delivery's claim query gets 2 s, however loaded the machine (at 1 s, about 5x a loaded round trip).
      deadlineMs: 2000,
      maxRunMs: 2400,
      // A pool of 4 gives 3 slots, a share of 1 per type: the hung run would quarantine its type, and the next event
      // of its key be answered 503 quarantined. This test is about the run's claim and key.
      bulkheads: false,
    })
    const errors: WebhookError[] = []
    webhooks.onError((error) => void errors.push(error))
    const hung = sampleEvent('transaction_settled', {
      data: { transaction_id: 'txn_max_run', settlement_date: '2026-11-03T08:00:00Z' },
    })
    let started!: () => void
    const hanging = new Promise<void>((resolve) => {
      started = resolve
    })
    const stuck = gate()
    webhooks.on('transaction_settled', async (e, context) => {
      await context.db.query(`INSERT INTO ${ledger} (event_id, status) VALUES ($1, 'settled')`, [e.event_id])
      if (e.event_id !== hung.event_id) return
      started()
      await stuck.promise // ignores its signal
    })
    const next = sampleEvent('transaction_settled', {
      data: { transaction_id: 'txn_max_run', settlement_date: '2026-11-04T08:00:00Z' },
    })
    try {
      const first = deliver(webhooks, hung)
      await hanging // holds its claim and key now
      expect(await first).toBe(503) // deadline_exceeded; the handler goes on
      expect(await deliver(webhooks, next)).toBe(409) // the key is held
      await vi.waitFor(
        () => expect(errors.find((error) => error.code === 'handler_timeout')).toBeInstanceOf(HandlerTimeoutError),
        { timeout: 10_000, interval: 50 },
      )
      expect(await deliver(webhooks, next)).toBe(409) // still held past maxRunMs
      expect(await deliver(webhooks, hung)).toBe(409)
    } finally {
      stuck.open()
    }
    await vi.waitFor(async () => expect(await deliver(webhooks, next)).toBe(200), { timeout: 10_000, interval: 50 })
    // A duplicate once done with its writes: the run may still be settling when the next event's 200 comes (seen once
    // under a whole CI run: 409, the service's retry then answered as a duplicate).
    await vi.waitFor(async () => expect(await deliver(webhooks, hung)).toBe(200), { timeout: 10_000, interval: 50 })
    const { rows } = await admin.query(`SELECT event_id FROM ${ledger} ORDER BY id`)
    expect(rows).toEqual([{ event_id: hung.event_id }, { event_id: next.event_id }])
    await webhooks.close({ timeoutMs: 100 })
  })
})
