// "Replay all matching" in batches: no request replays more than replayBatchSize letters; the cursor carries the
// run to its end, oldest first, each handler once, the failed ones left parked and skipped; two consoles at once
// share one run; a forged or used cursor is refused.
import { describe, expect, it } from 'vitest'
import { change, json, park, request, setUp } from './test-helpers.js'

interface Report {
  tried: number
  processed: number
  failed: number
  notFound: number
  inProgress: number
  duplicate: number
  total: number | null
  gone: number | null
  remaining: number | null
  done: boolean
}

interface Batch {
  outcomes: { eventId: string; status: string }[]
  report: Report
  run: Report
  total: number | null
  remaining: number | null
  cursor: string | null
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
    expect(batches.at(-1)).toMatchObject({
      total: 300,
      remaining: 0,
      cursor: null,
      run: { tried: 300, processed: 297, failed: 3, gone: 0, remaining: 0, done: true },
    })
    expect(batches[0]).toMatchObject({ total: 300, remaining: 260, run: { tried: 40, processed: 39, failed: 1 } })
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
    expect(first).toMatchObject({ remaining: 1, run: { tried: 2, processed: 2 } })
    // A cursor altered (its step, its run) is not one the receiver signed.
    const [payload, signature] = [first.cursor.slice(0, first.cursor.lastIndexOf('.')), first.cursor.split('.').pop()]
    for (const forged of [`${payload.replace(/1(%5D|\])$/, '0$1')}.${signature}`, `${payload}.${'0'.repeat(64)}`]) {
      const bad = await board.handle(request(change('/api/dead-letters/replay-matching', { cursor: forged })))
      expect(bad.status).toBe(400)
    }
    // Letters deleted meanwhile: the run ends when no letter is left, whatever the count said, and says so.
    await store.delete?.('evt_c_2')
    const last = json(
      await board.handle(request(change('/api/dead-letters/replay-matching', { cursor: first.cursor }))),
    )
    expect(last).toMatchObject({ outcomes: [], remaining: 0, cursor: null, run: { tried: 2, gone: 1, done: true } })
    // Used once: the same cursor again is stale.
    const again = await board.handle(request(change('/api/dead-letters/replay-matching', { cursor: first.cursor })))
    expect(again.status).toBe(409)
    expect(runs.size).toBe(2)
  })

  it('two consoles replaying all at once while a third deletes: each letter tried once, the failing ones left parked', async () => {
    const { board, store, webhooks, runs } = await setUp({ replayBatchSize: 7 })
    const tried = new Map<string, number>()
    const failing = new Set(Array.from({ length: 20 }, (_, i) => `evt_r_${i * 10 + 3}`))
    webhooks.on('transaction_settled', async (event) => {
      tried.set(event.event_id, (tried.get(event.event_id) ?? 0) + 1)
      await new Promise((resolve) => setTimeout(resolve, 1))
      if (failing.has(event.event_id)) throw new Error('still down')
    })
    for (let i = 0; i < 200; i++) await park(store, `evt_r_${i}`, { at: at(i), code: 'handler_failed' })
    const deleted = ['evt_r_13', 'evt_r_150', 'evt_r_151', 'evt_r_199']
    const console_ = async () => {
      const batches: Batch[] = []
      let body: Record<string, unknown> = { confirmCount: 200 }
      for (;;) {
        const answer = await board.handle(request(change('/api/dead-letters/replay-matching', body)))
        expect(answer.status).toBe(200)
        batches.push(json(answer) as Batch)
        const cursor = batches.at(-1)?.cursor
        if (!cursor) return batches
        body = { cursor }
      }
    }
    const deleting = (async () => {
      for (const id of deleted) {
        await new Promise((resolve) => setTimeout(resolve, 5))
        await board.handle(request(change('/api/dead-letters/delete', { eventIds: [id] })))
      }
    })()
    const [a, b] = await Promise.all([console_(), console_(), deleting])
    const outcomes = [...(a ?? []), ...(b ?? [])].flatMap((batch) => batch.outcomes)
    // Every letter reached once by one console or the other, or deleted before.
    const ids = outcomes.map((o) => o.eventId)
    expect(new Set(ids).size).toBe(ids.length)
    for (let i = 0; i < 200; i++) {
      const id = `evt_r_${i}`
      if (!ids.includes(id)) expect(deleted).toContain(id)
      expect(tried.get(id) ?? 0).toBeLessThanOrEqual(1)
    }
    expect([...tried.values()].every((n) => n === 1)).toBe(true)
    const parked = (await store.list({ limit: 1000 })).map((letter) => letter.eventId).sort()
    expect(parked).toEqual([...failing].filter((id) => !deleted.includes(id)).sort())
    // Each console's figures are its own outcomes; the run's, once over, add up to the store.
    for (const batches of [a, b]) {
      const last = batches?.at(-1) as Batch
      const mine = batches?.flatMap((batch) => batch.outcomes) ?? []
      expect(last.report.tried).toBe(mine.length)
      expect(last.report.failed).toBe(mine.filter((o) => o.status === 'failed').length)
      expect(last.report.processed).toBe(mine.filter((o) => o.status === 'processed').length)
    }
    const final = [a?.at(-1), b?.at(-1)].find((batch) => batch?.run.done)?.run as Report
    expect(final).toMatchObject({ total: 200, tried: outcomes.length, remaining: 0 })
    expect(final.failed).toBe(outcomes.filter((o) => o.status === 'failed').length)
    expect(final.tried + (final.gone ?? 0) - final.notFound).toBe(200)
    expect([...runs.values()].every((n) => n === 1)).toBe(true)
  })

  it("audits every batch with its run's filter, whatever a request continuing it sends, in one log line each", async () => {
    const { board, store, webhooks, audits, logs } = await setUp({ replayBatchSize: 50 })
    webhooks.on('transaction_settled', (event) => {
      if (event.event_id === 'evt_a_7') throw new Error('still down')
    })
    for (let i = 0; i < 120; i++) await park(store, `evt_a_${i}`, { at: at(i), code: 'handler_failed' })
    await park(store, 'evt_a_schema', { at: at(3), code: 'schema_mismatch' })
    const started = Date.now()
    let body: Record<string, unknown> = { filter: { code: 'handler_failed' }, confirmCount: 120 }
    for (;;) {
      const batch = json(await board.handle(request(change('/api/dead-letters/replay-matching', body)))) as Batch
      if (batch.cursor === null) break
      // The page's filter box changed meanwhile (or a hand-made request): the cursor's run is what replays.
      body = { filter: { code: 'schema_mismatch', eventType: 'payment_created' }, cursor: batch.cursor }
    }
    expect(audits.map((audit) => audit.outcomes?.length)).toEqual([50, 50, 20])
    for (const audit of audits) {
      expect(audit.filter?.code).toBe('handler_failed')
      expect(audit.filter?.eventType).toBeUndefined()
      expect(audit.filter?.parkedBefore?.getTime()).toBeGreaterThanOrEqual(started)
    }
    expect((await store.get('evt_a_schema'))?.status).toBe('parked')
    const lines = logs.filter((line) => line.startsWith('payhooks board: replay all'))
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(
      /^payhooks board: replay all of 50 dead letter\(s\) by ops: 49 processed, 1 failed; filter code=handler_failed parkedBefore=\S+Z$/,
    )
    for (const line of lines) expect(line).not.toMatch(/evt_a_\d+.*evt_a_\d+|\n/)
  })

  it('refuses a batch size outside 1 to 500', async () => {
    for (const replayBatchSize of [0, 501, 1.5]) {
      await expect(setUp({ replayBatchSize })).rejects.toThrow(/replayBatchSize/)
    }
  })
})
