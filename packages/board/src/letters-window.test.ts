import { describe, expect, it } from 'vitest'
import { change, json, park, request, setUp } from './test-helpers.js'

const ids = (answer: { letters: { eventId: string }[] }) => answer.letters.map((letter) => letter.eventId)

describe("board: letters by the events' created_at", () => {
  it('lists, counts and replays all matching a created window, with the parked window too; a bad time is 400', async () => {
    const { board, store, runs, audits } = await setUp()
    // Created in the outage (02:00 to 04:00), parked in another order; evt_none has no created_at.
    await park(store, 'evt_c3', { created: '2026-11-28T03:00:00Z', at: '2026-11-28T10:01:00Z' })
    await park(store, 'evt_c1', { created: '2026-11-28T01:00:00Z', at: '2026-11-28T10:02:00Z' })
    await park(store, 'evt_c2', { created: '2026-11-28T02:00:00Z', at: '2026-11-28T10:03:00Z' })
    await park(store, 'evt_none', { at: '2026-11-28T10:04:00Z' })
    await park(store, 'evt_c4', { created: '2026-11-28T04:00:00Z', at: '2026-11-28T10:05:00Z' })
    const window = 'createdFrom=2026-11-28T02:00:00Z&createdTo=2026-11-28T04:00:00Z'
    const list = async (query: string) => json(await board.handle(request({ path: '/api/dead-letters', query })))
    const listed = await list(window)
    expect(ids(listed)).toEqual(['evt_c2', 'evt_c3'])
    expect(listed.letters[0]).toMatchObject({ createdAt: '2026-11-28T02:00:00.000Z' })
    expect(ids(await list('createdTo=2026-11-28T02:00:00Z'))).toEqual(['evt_c1'])
    expect(ids(await list(`${window}&from=2026-11-28T10:02:00Z`))).toEqual(['evt_c2'])
    // Keyset pages within the window.
    const first = await list(`${window}&limit=1`)
    expect(ids(first)).toEqual(['evt_c2'])
    expect(ids(await list(`${window}&limit=1&after=${first.older}`))).toEqual(['evt_c3'])
    const count = json(await board.handle(request({ path: '/api/dead-letters/count', query: window })))
    expect(count).toEqual({ count: 2 })

    const filter = { createdFrom: '2026-11-28T02:00:00Z', createdTo: '2026-11-28T04:00:00Z' }
    const done = json(
      await board.handle(request(change('/api/dead-letters/replay-matching', { filter, confirmCount: 2 }))),
    )
    expect(done.outcomes.map((o: { eventId: string }) => o.eventId)).toEqual(['evt_c3', 'evt_c2'])
    expect(done).toMatchObject({ total: 2, remaining: 0, cursor: null, run: { tried: 2, processed: 2 } })
    expect([...runs.keys()]).toEqual(['evt_c3', 'evt_c2'])
    expect(audits[0]).toMatchObject({
      action: 'replay_all',
      filter: { createdAfter: new Date(filter.createdFrom), createdBefore: new Date(filter.createdTo) },
    })
    expect(ids(await list(''))).toEqual(['evt_c4', 'evt_none', 'evt_c1'])

    for (const query of ['createdFrom=yesterday', 'createdTo=2026-13-45']) {
      expect((await board.handle(request({ path: '/api/dead-letters', query }))).status).toBe(400)
      expect((await board.handle(request({ path: '/api/dead-letters/count', query }))).status).toBe(400)
    }
    const refused = await board.handle(
      request(change('/api/dead-letters/replay-matching', { filter: { createdFrom: 'soon' }, confirmCount: 0 })),
    )
    expect(refused.status).toBe(400)
  })
})
