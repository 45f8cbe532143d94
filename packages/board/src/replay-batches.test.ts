// "Replay all matching" in batches: no request replays more than replayBatchSize letters; the cursor carries the
// run to its end, oldest first, each handler once, the failed ones left parked and skipped.
import { describe, expect, it } from 'vitest'
import { change, json, park, request, setUp } from './test-helpers.js'

interface Batch {
  outcomes: { eventId: string; status: string }[]
  total: number
  done: number
  failed: number
  remaining: number
  cursor: unknown
}

const at = (i: number) => new Date(Date.parse('2026-11-20T00:00:00Z') + i * 1000).toISOString()

describe('replay all matching, in batches', () => {
  it('replays a few hundred letters at most N per request, oldest first, each handler once', async () => {
    const { board, store, webhooks, runs, audits } = await setUp({ replayBatchSize: 40 })
    const failing = new Set(['evt_b_7', 'evt_b_150', 'evt_b_299'])
    webhooks.on('transaction_settled', (event) => {
      if (failing.has(event.event_id)) throw new Error('still down')
    })
    for (let i = 0; i < 300; i++) await park(store, `evt_b_${i}`, { at: at(i), code: 'handler_failed' })
    await park(store, 'evt_other_code', { at: at(5), code: 'schema_mismatch' })
    const filter = { code: 'handler_failed' }
    const { count } = json(
      await board.handle(request({ path: '/api/dead-letters/count', query: 'code=handler_failed' })),
    )
    expect(count).toBe(300)
    const batches: Batch[] = []
    let body: Record<string, unknown> = { filter, confirmCount: count }
    for (;;) {
      const answer = await board.handle(request(change('/api/dead-letters/replay-matching', body)))
      expect(answer.status).toBe(200)
      const batch = json(answer) as Batch
      batches.push(batch)
      if (batches.length === 1) {
        // Parked while the run goes on: not in the set confirmed.
        await park(store, 'evt_b_late', { at: new Date(Date.now() + 60_000).toISOString() })
      }
      if (batch.cursor === null) break
      body = { filter, cursor: batch.cursor }
      expect(batches.length).toBeLessThan(20)
    }
    expect(batches.length).toBe(8) // 300 in 40s
    expect(Math.max(...batches.map((b) => b.outcomes.length))).toBe(40)
    const order = batches.flatMap((b) => b.outcomes.map((o) => o.eventId))
    expect(order).toEqual(Array.from({ length: 300 }, (_, i) => `evt_b_${i}`))
    expect(batches.at(-1)).toMatchObject({ total: 300, done: 297, failed: 3, remaining: 0, cursor: null })
    expect(batches[0]).toMatchObject({ total: 300, done: 39, failed: 1, remaining: 260 })
    expect(order.filter((id) => failing.has(id))).toHaveLength(3)
    expect([...runs.values()].every((n) => n === 1)).toBe(true)
    expect(runs.size).toBe(300)
    expect((await store.get('evt_b_7'))?.status).toBe('parked')
    expect((await store.get('evt_b_late'))?.status).toBe('parked')
    expect((await store.get('evt_other_code'))?.status).toBe('parked')
    expect(audits).toHaveLength(8)
    expect(audits.every((a) => a.action === 'replay_all' && (a.outcomes?.length ?? 0) <= 40)).toBe(true)
  })

  it('asks for the count again when it changed, and refuses a cursor it did not give', async () => {
    const { board, store, runs } = await setUp({ replayBatchSize: 2 })
    for (let i = 0; i < 3; i++) await park(store, `evt_c_${i}`, { at: at(i) })
    const stale = await board.handle(request(change('/api/dead-letters/replay-matching', { confirmCount: 2 })))
    expect(stale.status).toBe(409)
    expect(json(stale)).toEqual({ error: 'the count changed: confirm again', count: 3 })
    for (const cursor of [{ before: 'soon', skipped: 0, done: 0, total: 3 }, { before: at(9) }, 'x']) {
      const bad = await board.handle(request(change('/api/dead-letters/replay-matching', { cursor })))
      expect(bad.status).toBe(400)
    }
    expect(runs.size).toBe(0)
    const first = json(await board.handle(request(change('/api/dead-letters/replay-matching', { confirmCount: 3 }))))
    expect(first).toMatchObject({ done: 2, remaining: 1 })
    // Letters deleted meanwhile: the run ends when no letter is left, whatever the count said.
    await store.delete?.('evt_c_2')
    const last = json(
      await board.handle(request(change('/api/dead-letters/replay-matching', { cursor: first.cursor }))),
    )
    expect(last).toMatchObject({ outcomes: [], remaining: 0, cursor: null })
  })

  it('refuses a batch size outside 1 to 500', async () => {
    for (const replayBatchSize of [0, 501, 1.5]) {
      await expect(setUp({ replayBatchSize })).rejects.toThrow(/replayBatchSize/)
    }
  })
})
