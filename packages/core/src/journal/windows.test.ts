// A list filtered by an event type that matches nothing must not walk the whole retention in one call: no journal
// indexes event types, so `webhooks.events.list({ eventType })` searches an hour at a time and answers, after about
// half a second, what it found with a cursor to search on. The journal here is a memoryJournal whose reads cost what a
// remote journal's do, in proportion to the hours they walk (a Redis or PostgreSQL journal walks every record of the
// range for a filter it has no index for).
import { describe, expect, it, vi } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import { memoryJournal } from './memory.js'
import type { Journal, JournalListQuery, JournalRecord } from './types.js'
import { listByHours, TYPE_SEARCH_MS } from './windows.js'

const HOUR = 3_600_000
const RETENTION = 168 * HOUR
/** What walking one hour of answers costs the slow journal. */
const PER_HOUR_MS = 20

function slowJournal(records: JournalRecord[]) {
  const inner = memoryJournal({ retentionMs: RETENTION })
  const asked: JournalListQuery[] = []
  const journal: Journal = {
    ...inner,
    retentionMs: RETENTION,
    async list(query) {
      asked.push(query)
      const now = Date.now()
      const hours = (Math.min(query.to ?? now, now) - Math.max(query.from ?? 0, now - RETENTION)) / HOUR
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, hours) * PER_HOUR_MS))
      return inner.list(query)
    },
  }
  return { journal, asked, written: inner.write(records) }
}

/** An answer every 10 minutes over the whole retention, all `transaction_settled` but one `payment_created`. */
function week(now: number): JournalRecord[] {
  const records: JournalRecord[] = []
  for (let at = now - RETENTION + HOUR; at < now; at += 10 * 60_000) {
    const old = Math.abs(at - (now - 100 * HOUR)) < 5 * 60_000
    records.push({
      id: `r${records.length.toString(36)}`,
      at,
      eventId: `evt_${records.length}`,
      eventType: old ? 'payment_created' : 'transaction_settled',
      createdAt: null,
      status: 200,
      outcome: 'processed',
      instance: 'web-1',
      durationMs: 3,
      secretIndex: 0,
    })
  }
  return records
}

describe('events.list by event type', () => {
  it('searches on below where the last page stopped even when each read takes longer than the budget', async () => {
    // Each read of the journal costs more than TYPE_SEARCH_MS of this clock (a loaded machine, a slow journal).
    let clock = 1_800_000_000_000
    const now = vi.spyOn(Date, 'now').mockImplementation(() => clock)
    try {
      const journal = {
        retentionMs: RETENTION,
        async list() {
          clock += TYPE_SEARCH_MS + 100
          return []
        },
      }
      const query = { eventType: 'transaction_setled', limit: 50 }
      const first = await listByHours(journal, query, clock)
      let from = first.searchedFrom as number
      expect(from).toBeLessThan(clock)
      for (let page = 0; page < 3; page++) {
        const after = { at: from, id: '0' }
        const next = await listByHours(journal, { ...query, after }, clock)
        expect(next.searchedFrom).toBeLessThanOrEqual(from - HOUR)
        from = next.searchedFrom as number
      }
    } finally {
      now.mockRestore()
    }
  })

  it('answers a type that matches nothing within its bound, with a cursor that searches on to the end', async () => {
    const now = Date.now()
    const { journal, asked, written } = slowJournal(week(now))
    await written
    const webhooks = createWebhooks({ secret: 'whsec_windows', journal, checkAtStart: false })
    const started = Date.now()
    const first = await webhooks.events.list({ eventType: 'transaction_setled' })
    const took = Date.now() - started
    // The whole retention would cost 168 h × 20 ms = 3.4 s; a page stops at the bound, having searched a few hours.
    expect(took).toBeLessThan(TYPE_SEARCH_MS + 1000)
    expect(first.answers).toEqual([])
    expect(first.cursor).toEqual(expect.any(String))
    expect(first.searchedFrom?.getTime()).toBeGreaterThan(now - RETENTION)
    expect(first.searchedFrom?.getTime()).toBeLessThan(now)
    for (const query of asked) expect((query.to as number) - (query.from as number)).toBeLessThanOrEqual(HOUR)
    // Following the cursor searches on, below where the last page stopped, to the end of the retention.
    let page = first
    let pages = 1
    while (page.cursor) {
      const before = page.searchedFrom?.getTime() ?? Number.POSITIVE_INFINITY
      page = await webhooks.events.list({ eventType: 'transaction_setled', cursor: page.cursor })
      expect(page.answers).toEqual([])
      if (page.searchedFrom) expect(page.searchedFrom.getTime()).toBeLessThan(before)
      pages++
    }
    expect(pages).toBeGreaterThan(2)
    expect(page.searchedFrom).toBeUndefined()
    await webhooks.close()
  }, 120_000)

  it('finds a rare type deep in the retention by following the cursor, and fills a page of a common one at once', async () => {
    const now = Date.now()
    const { journal, written } = slowJournal(week(now))
    await written
    const webhooks = createWebhooks({ secret: 'whsec_windows', journal, checkAtStart: false })
    let page = await webhooks.events.list({ eventType: 'payment_created' })
    const found = [...page.answers]
    while (found.length === 0 && page.cursor) {
      page = await webhooks.events.list({ eventType: 'payment_created', cursor: page.cursor })
      found.push(...page.answers)
    }
    expect(found.map((answer) => answer.eventType)).toEqual(['payment_created'])
    const common = await webhooks.events.list({ eventType: 'transaction_settled', limit: 10 })
    expect(common.answers).toHaveLength(10)
    expect(common.searchedFrom).toBeUndefined()
    // The next page continues after the last answer, as any keyset page does.
    const next = await webhooks.events.list({ eventType: 'transaction_settled', limit: 10, cursor: common.cursor })
    expect(next.answers[0]?.at.getTime()).toBeLessThan(common.answers[9]?.at.getTime() as number)
    await webhooks.close()
  }, 120_000)
})
