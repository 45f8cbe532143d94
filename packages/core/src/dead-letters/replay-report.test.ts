import { describe, expect, it } from 'vitest'
import { createWebhooks, memoryDeadLetterStore, memoryJournal, memoryStore, SIGNATURE_HEADER } from '../index.js'
import { sign } from '../verify/signature.js'

const SECRET = 'whsec_replay_report'

function settled(id: string): string {
  return JSON.stringify({
    event_type: 'transaction_settled',
    event_id: id,
    merchant_id: 1234,
    created_at: new Date().toISOString(),
    data: {
      transaction_id: 'txn_1',
      transaction_amount: 10,
      transaction_surcharge_amount: 0,
      transaction_date: '2026-11-02T15:05:00Z',
      settlement_code: 'FUNDED',
      settlement_amount: 10,
      settlement_date: '2026-11-03T07:59:00Z',
      transaction_net_amount: 10,
    },
  })
}

async function signed(body: string) {
  return { [SIGNATURE_HEADER]: await sign(SECRET, body), 'content-type': 'application/json' }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a replay-all report: when its duplicates were handled', () => {
  it('tells a duplicate replayed by another caller meanwhile from one the journal saw handled before the run, and leaves the rest unknown', async () => {
    const dedupe = memoryStore()
    const letters = memoryDeadLetterStore()
    const runs = new Map<string, number>()
    const count = (event: { event_id: string }) => {
      runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
    }
    const webhooks = createWebhooks({ secret: SECRET, store: dedupe, deadLetters: letters, journal: memoryJournal() })
    webhooks.onAny(count)
    // Another instance sharing the dedupe store but writing no journal: what it handled has no time anyone kept.
    const unjournaled = createWebhooks({ secret: SECRET, store: dedupe }).onAny(count)
    const deliver = async (receiver: typeof webhooks | typeof unjournaled, body: string) => {
      const headers = await signed(body)
      const answer = await receiver.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })
      expect(answer.status).toBe(200)
    }
    const bodies = Object.fromEntries(
      ['evt_fresh', 'evt_meanwhile', 'evt_before', 'evt_unknown'].map((id) => [id, settled(id)]),
    )
    await deliver(webhooks, bodies.evt_before as string) // handled, and journaled, before the run
    await deliver(unjournaled, bodies.evt_unknown as string) // handled before the run, journaled nowhere
    // Parked all the same (an event parked while its run went on elsewhere), oldest first in this order.
    const now = Date.now()
    for (const [i, [eventId, body]] of Object.entries(bodies).entries()) {
      letters.park({
        eventId,
        eventType: 'transaction_settled',
        body: new TextEncoder().encode(body),
        headers: await signed(body),
        code: 'handler_failed',
        reason: 'r',
        createdAt: undefined,
        parkedAt: new Date(now - 1000 + i),
      })
    }
    await sleep(5)
    const replayBatch = webhooks.deadLetters.replayBatch
    if (!replayBatch) throw new Error('expected replayBatch')
    // The run takes its letters, then replays them one at a time; the first one's handler waits.
    let release = () => {}
    let entered = () => {}
    const running = new Promise<void>((resolve) => {
      entered = resolve
    })
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    webhooks.on('transaction_settled', async (event) => {
      if (event.event_id !== 'evt_fresh') return
      entered()
      await held
    })
    const batch = replayBatch({ limit: 10, concurrency: 1 })
    await running
    // Meanwhile another operator replays a letter the run has taken but not reached.
    expect(await webhooks.deadLetters.replay('evt_meanwhile')).toEqual({
      eventId: 'evt_meanwhile',
      status: 'processed',
    })
    release()
    const last = await batch
    const replayedAt = letters.get('evt_meanwhile')?.replayedAt
    const [fresh, meanwhile, before, unknown] = last.outcomes
    expect(fresh).toEqual({ eventId: 'evt_fresh', status: 'processed' })
    expect(meanwhile).toEqual({ eventId: 'evt_meanwhile', status: 'duplicate', handledAt: replayedAt })
    expect(before).toMatchObject({ eventId: 'evt_before', status: 'duplicate', handledAt: expect.any(Date) })
    // Handled before `now` was read (1-2 ms before here; the same millisecond on a faster machine), the run 5 ms after.
    expect((before as { handledAt: Date }).handledAt.getTime()).toBeLessThanOrEqual(now)
    expect(unknown).toEqual({ eventId: 'evt_unknown', status: 'duplicate' })
    expect(last.run).toMatchObject({
      tried: 4,
      processed: 1,
      duplicate: 3,
      duplicateMeanwhile: 1,
      duplicateBefore: 1,
      done: true,
    })
    expect([...runs.values()]).toEqual([1, 1, 1, 1])
    await webhooks.close()
    await unjournaled.close()
  })
})
