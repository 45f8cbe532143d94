import {
  type DeadLetterCountQuery,
  type DeadLetterQuery,
  deadLetterCursor,
  type ParkedEvent,
  SIGNATURE_HEADER,
} from '@payhooks/core'
import { expect, it } from 'vitest'
import type { Fleet } from './types.js'

const MINUTE = 60_000
const BASE = Date.parse('2026-11-28T00:00:00.000Z')

/** One letter of the window tests: parked at `BASE + parked` minutes, created at `BASE + created` (or none). */
interface Spec {
  id: string
  parked: number
  created: number | undefined
  code: ParkedEvent['code']
  type: string
}

/**
 * Twenty letters whose `created_at` runs against their parking (a stale resend parked late, an outage's events
 * parked at once): ids 00 to 19 parked a minute apart, created in another order, every fifth without `created_at`.
 */
const SPECS: Spec[] = Array.from({ length: 20 }, (_, i) => ({
  id: `evt_win_${String(i).padStart(2, '0')}`,
  parked: i,
  created: i % 5 === 4 ? undefined : (i * 7) % 20,
  code: i % 2 === 0 ? 'handler_failed' : 'stale_event',
  type: i % 3 === 0 ? 'transaction_returned' : 'transaction_settled',
}))

const at = (minutes: number) => new Date(BASE + minutes * MINUTE)

function letterOf(spec: Spec): ParkedEvent {
  return {
    eventId: spec.id,
    eventType: spec.type,
    body: new TextEncoder().encode(`{"event_id":"${spec.id}"}`),
    headers: { [SIGNATURE_HEADER]: 'A'.repeat(64) },
    code: spec.code,
    reason: 'r',
    createdAt: spec.created === undefined ? undefined : at(spec.created),
    parkedAt: at(spec.parked),
  }
}

/** The letters of `specs` a query of windows in minutes would find, in list order (newest parked first). */
function expected(specs: Spec[], query: Window & { code?: string; type?: string }, order = 'newest'): string[] {
  const found = specs.filter(
    (spec) =>
      (query.code === undefined || spec.code === query.code) &&
      (query.type === undefined || spec.type === query.type) &&
      (query.parkedFrom === undefined || spec.parked >= query.parkedFrom) &&
      (query.parkedTo === undefined || spec.parked < query.parkedTo) &&
      ((query.createdFrom === undefined && query.createdTo === undefined) ||
        (spec.created !== undefined &&
          (query.createdFrom === undefined || spec.created >= query.createdFrom) &&
          (query.createdTo === undefined || spec.created < query.createdTo))),
  )
  found.sort((a, b) => (order === 'newest' ? b.parked - a.parked : a.parked - b.parked))
  return found.map((spec) => spec.id)
}

interface Window {
  parkedFrom?: number
  parkedTo?: number
  createdFrom?: number
  createdTo?: number
}

function filterOf(query: Window & { code?: string; type?: string }): DeadLetterCountQuery {
  return {
    ...(query.parkedFrom === undefined ? {} : { parkedAfter: at(query.parkedFrom) }),
    ...(query.parkedTo === undefined ? {} : { parkedBefore: at(query.parkedTo) }),
    ...(query.createdFrom === undefined ? {} : { createdAfter: at(query.createdFrom) }),
    ...(query.createdTo === undefined ? {} : { createdBefore: at(query.createdTo) }),
    ...(query.code === undefined ? {} : { code: query.code as ParkedEvent['code'] }),
    ...(query.type === undefined ? {} : { eventType: query.type }),
  }
}

/** Windows on both times, wide and narrow, each cheaper to read one way or another (a store may choose). */
const WINDOWS: (Window & { code?: string; type?: string })[] = [
  { createdFrom: 0 },
  { createdFrom: 5, createdTo: 12 },
  { createdTo: 3 },
  { createdFrom: 19, createdTo: 20 }, // one letter created then, parked near the end
  { createdFrom: 14 }, // letters parked early: a newest-first walk reaches them last
  { createdFrom: 0, parkedFrom: 15, parkedTo: 17 }, // a narrow parked window in a wide created one
  { createdFrom: 0, parkedTo: 19 }, // all but the newest: a run bounded by its start
  { createdFrom: 0, parkedFrom: 1 },
  { createdFrom: 6, createdTo: 9, parkedFrom: 2, parkedTo: 18 },
  { createdFrom: 0, createdTo: 20, code: 'handler_failed' },
  { createdFrom: 3, type: 'transaction_returned' },
  { createdFrom: 0, code: 'stale_event', type: 'transaction_settled', parkedTo: 15 },
  { createdFrom: 50 }, // none
]

/** The store's tests of windows of the events' `created_at`, with and without the parked window. */
export function windowTests(fleet: (namespace?: string) => Fleet): void {
  it("lists and counts by the events' created_at window, alone or with the parked window, code and type", async () => {
    const store = await fleet()()
    for (const spec of SPECS) await store.park(letterOf(spec))
    const ids = async (query: DeadLetterQuery) => (await store.list({ limit: 100, ...query })).map((l) => l.eventId)
    for (const window of WINDOWS) {
      const filter = filterOf(window)
      expect(await ids(filter), JSON.stringify(window)).toEqual(expected(SPECS, window))
      expect(await ids({ ...filter, order: 'oldest' }), JSON.stringify(window)).toEqual(
        expected(SPECS, window, 'oldest'),
      )
      if (store.count) expect(await store.count(filter), JSON.stringify(window)).toBe(expected(SPECS, window).length)
    }
    // A letter without created_at is in no created window, however wide, and in every list without one.
    expect(await ids({ createdAfter: new Date(0) })).not.toContain('evt_win_04')
    expect(await ids({ createdBefore: new Date(8.64e15) })).not.toContain('evt_win_04')
    expect(await ids({})).toContain('evt_win_04')
    await expect((async () => store.list({ createdAfter: new Date('nope') }))()).rejects.toThrow(TypeError)
    if (store.count) {
      await expect((async () => store.count?.({ createdBefore: 'yesterday' as never }))()).rejects.toThrow(TypeError)
    }
  })

  it('pages a created window by keyset and by offset, newest or oldest first, never skipping nor repeating one', async () => {
    const store = await fleet()()
    for (const spec of SPECS) await store.park(letterOf(spec))
    const walk = async (query: DeadLetterQuery, limit: number) => {
      const seen: string[] = []
      let after: string | undefined
      for (let pages = 0; pages < 50; pages++) {
        const page = await store.list({ ...query, limit, ...(after ? { after } : {}) })
        seen.push(...page.map((letter) => letter.eventId))
        const last = page[page.length - 1]
        if (page.length < limit || !last) return seen
        after = deadLetterCursor(last)
      }
      throw new Error('the walk did not end')
    }
    for (const window of [WINDOWS[1], WINDOWS[4], WINDOWS[8]] as Window[]) {
      for (const order of ['newest', 'oldest'] as const) {
        for (const limit of [1, 2, 3, 7]) {
          expect(await walk({ ...filterOf(window), order }, limit)).toEqual(expected(SPECS, window, order))
        }
        const all = expected(SPECS, window, order)
        expect((await store.list({ ...filterOf(window), order, limit: 2, offset: 1 })).map((l) => l.eventId)).toEqual(
          all.slice(1, 3),
        )
      }
    }
  })

  it('keeps created windows with each replay, park again and delete, by status', async () => {
    const store = await fleet()()
    for (const spec of SPECS) await store.park(letterOf(spec))
    const window = { createdAfter: at(5), createdBefore: at(12) }
    const inWindow = expected(SPECS, { createdFrom: 5, createdTo: 12 })
    const [first, second, third] = inWindow as [string, string, string]
    expect(await store.markReplayed(first, at(30))).toBe(true)
    const ids = async (query: DeadLetterQuery) => (await store.list({ limit: 100, ...query })).map((l) => l.eventId)
    expect(await ids({ ...window, status: 'replayed' })).toEqual([first])
    expect(await ids(window)).toEqual(inWindow.slice(1))
    expect(await ids({ ...window, status: 'all' })).toEqual(inWindow)
    if (store.count) {
      expect(await store.count({ ...window, status: 'replayed' })).toBe(1)
      expect(await store.count({ ...window, status: 'all', parkedBefore: at(19) })).toBe(
        expected(SPECS, { createdFrom: 5, createdTo: 12, parkedTo: 19 }).length,
      )
    }
    // Parked again with the same bytes: its created_at is the new delivery's, so it leaves the window.
    const spec = SPECS.find((s) => s.id === second) as Spec
    await store.park({ ...letterOf(spec), createdAt: at(40), parkedAt: at(41) })
    expect(await ids(window)).toEqual(inWindow.slice(2))
    expect(await ids({ createdAfter: at(40) })).toEqual([second])
    if (store.count) expect(await store.count({ createdAfter: at(40) })).toBe(1)
    if (store.delete) {
      expect(await store.delete(third)).toBe(true)
      expect(await ids(window)).toEqual(inWindow.slice(3))
      if (store.count) expect(await store.count(window)).toBe(inWindow.length - 3)
    }
  })
}
