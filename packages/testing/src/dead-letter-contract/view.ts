import type { DeadLetter } from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { fleetNamespace } from '../fleet.js'
import { sampleEvent } from '../samples.js'
import type { ContractEvent, DeadLetterSubject, DeadLetterSubjectFactory } from './types.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until the clock moved past `time`, so letters parked one after the other have distinct times. */
async function after(time: number): Promise<void> {
  while (Date.now() <= time + 1) await sleep(2)
}

/**
 * What tools rely on from a `DeadLetters` (list, get, replay, replayAll), as a vitest suite: newest first,
 * filters and pages, replay runs an event's handlers once and a second replay runs nothing. Run by
 * {@link deadLetterContract} for every store, and on its own for dead letters that are not a store (BullMQ's
 * failed jobs, through `bullmqDeadLetters`).
 *
 * @example
 * deadLetterViewContract('bullmqDeadLetters', async (namespace) => makeQueueSubject(namespace))
 */
export function deadLetterViewContract(name: string, makeSubject: DeadLetterSubjectFactory): void {
  const made: DeadLetterSubject[] = []
  afterEach(async () => {
    for (const subject of made.splice(0)) await subject.close?.()
  })
  async function subject(): Promise<DeadLetterSubject> {
    const made_ = await makeSubject(fleetNamespace(name))
    made.push(made_)
    return made_
  }
  /** Parks `events` one after the other, each at a later millisecond than the one before. */
  async function parkAll(s: DeadLetterSubject, events: ContractEvent[], reason = 'boom'): Promise<void> {
    for (const event of events) {
      await s.park(event, `${reason} ${event.event_id}`)
      // Past the millisecond the park returned in, so past its parkedAt (a slow park stamped late): no two tie.
      await after(Date.now())
    }
  }
  const ids = (letters: DeadLetter[]) => letters.map((letter) => letter.eventId)
  const settled = (id: string, createdAt?: Date) =>
    sampleEvent('transaction_settled', { eventId: id, createdAt: createdAt?.toISOString() }) as ContractEvent
  const returned = (id: string) => sampleEvent('transaction_returned', { eventId: id }) as ContractEvent

  describe(`dead letters contract: ${name}`, () => {
    it('lists a parked event with its id, type, code, reason and time; get finds it, and nothing for an unknown id', async () => {
      const s = await subject()
      const before = Date.now()
      await parkAll(s, [settled('evt_dl_listed')], 'ledger down')
      const listed = await s.deadLetters.list()
      expect(ids(listed)).toEqual(['evt_dl_listed'])
      const letter = await s.deadLetters.get('evt_dl_listed')
      for (const found of [listed[0], letter]) {
        expect(found).toMatchObject({
          eventId: 'evt_dl_listed',
          eventType: 'transaction_settled',
          code: 'handler_failed',
          status: 'parked',
        })
        expect(found?.reason).toContain('ledger down evt_dl_listed')
        expect(found?.parkedAt).toBeInstanceOf(Date)
        expect(found?.parkedAt.getTime()).toBeGreaterThanOrEqual(before - 1000)
        expect(found?.parkedAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      }
      expect(await s.deadLetters.get('evt_dl_unknown')).toBeUndefined()
      expect(s.runs('evt_dl_listed')).toBe(0)
    })

    it('lists newest first, filters by event type, code and time, and pages with limit and offset', async () => {
      const s = await subject()
      await parkAll(s, [settled('evt_dl_a'), returned('evt_dl_b'), settled('evt_dl_c')])
      const all = await s.deadLetters.list()
      expect(ids(all)).toEqual(['evt_dl_c', 'evt_dl_b', 'evt_dl_a'])
      expect(ids(await s.deadLetters.list({ eventType: 'transaction_settled' }))).toEqual(['evt_dl_c', 'evt_dl_a'])
      expect(ids(await s.deadLetters.list({ code: 'handler_failed' }))).toEqual(['evt_dl_c', 'evt_dl_b', 'evt_dl_a'])
      expect(await s.deadLetters.list({ code: 'schema_mismatch' })).toEqual([])
      expect(ids(await s.deadLetters.list({ limit: 1, offset: 1 }))).toEqual(['evt_dl_b'])
      expect(ids(await s.deadLetters.list({ limit: 2 }))).toEqual(['evt_dl_c', 'evt_dl_b'])
      expect(await s.deadLetters.list({ offset: 3 })).toEqual([])
      const b = all[1] as DeadLetter
      expect(ids(await s.deadLetters.list({ parkedAfter: b.parkedAt }))).toEqual(['evt_dl_c', 'evt_dl_b'])
      expect(ids(await s.deadLetters.list({ parkedBefore: b.parkedAt }))).toEqual(['evt_dl_a'])
      expect(
        ids(await s.deadLetters.list({ eventType: 'transaction_settled', parkedAfter: b.parkedAt, limit: 5 })),
      ).toEqual(['evt_dl_c'])
      // count, where the letters can be counted, says how many a list would return.
      if (s.deadLetters.count) {
        expect(await s.deadLetters.count()).toBe(3)
        expect(await s.deadLetters.count({ eventType: 'transaction_settled' })).toBe(2)
        expect(await s.deadLetters.count({ code: 'schema_mismatch' })).toBe(0)
        expect(await s.deadLetters.count({ parkedAfter: b.parkedAt })).toBe(2)
        expect(await s.deadLetters.count({ status: 'replayed' })).toBe(0)
      }
    })

    it('replays a letter: its handlers run once and it leaves the parked list; a second replay runs nothing', async () => {
      const s = await subject()
      await parkAll(s, [settled('evt_dl_replayed'), settled('evt_dl_kept')])
      const first = await s.deadLetters.replay('evt_dl_replayed')
      expect(first.eventId).toBe('evt_dl_replayed')
      expect(['processed', 'queued']).toContain(first.status)
      await s.settle?.()
      expect(s.runs('evt_dl_replayed')).toBe(1)
      expect(ids(await s.deadLetters.list())).toEqual(['evt_dl_kept'])

      const second = await s.deadLetters.replay('evt_dl_replayed')
      expect(['duplicate', 'not_found']).toContain(second.status)
      await s.settle?.()
      expect(s.runs('evt_dl_replayed')).toBe(1)
      expect(s.runs('evt_dl_kept')).toBe(0)
    })

    it('replays every parked letter matching a filter, oldest first, and only those', async () => {
      const s = await subject()
      await parkAll(s, [settled('evt_dl_old'), returned('evt_dl_other'), settled('evt_dl_new')])
      const outcomes = await s.deadLetters.replayAll({ eventType: 'transaction_settled' })
      expect(outcomes.map((outcome) => outcome.eventId)).toEqual(['evt_dl_old', 'evt_dl_new'])
      for (const outcome of outcomes) expect(['processed', 'queued']).toContain(outcome.status)
      await s.settle?.()
      expect([s.runs('evt_dl_old'), s.runs('evt_dl_new'), s.runs('evt_dl_other')]).toEqual([1, 1, 0])
      expect(ids(await s.deadLetters.list())).toEqual(['evt_dl_other'])
      expect(await s.deadLetters.replayAll({ code: 'schema_mismatch' })).toEqual([])
    })

    it("counts, lists and replays all within a window of the events' created_at, with the parked window too", async () => {
      const s = await subject()
      const hour = 3_600_000
      const base = new Date(Math.floor(Date.now() / hour) * hour - 10 * hour)
      const created = (hours: number) => new Date(base.getTime() + hours * hour)
      // Created in another order than parked; a returned event has no created_at, so it is in no created window.
      await parkAll(s, [
        settled('evt_cw_b', created(1)),
        settled('evt_cw_a', created(0)),
        returned('evt_cw_r'),
        settled('evt_cw_c', created(2)),
        settled('evt_cw_d', created(3)),
      ])
      const window = { createdAfter: created(1), createdBefore: created(3) }
      expect(ids(await s.deadLetters.list(window))).toEqual(['evt_cw_c', 'evt_cw_b'])
      expect(ids(await s.deadLetters.list({ ...window, order: 'oldest' }))).toEqual(['evt_cw_b', 'evt_cw_c'])
      expect(ids(await s.deadLetters.list({ createdBefore: created(1) }))).toEqual(['evt_cw_a'])
      expect(ids(await s.deadLetters.list({ createdAfter: base }))).toEqual([
        'evt_cw_d',
        'evt_cw_c',
        'evt_cw_a',
        'evt_cw_b',
      ])
      const a = (await s.deadLetters.get('evt_cw_a')) as DeadLetter
      expect(a.createdAt?.getTime()).toBe(base.getTime())
      const parked = { createdAfter: base, parkedAfter: a.parkedAt }
      expect(ids(await s.deadLetters.list(parked))).toEqual(['evt_cw_d', 'evt_cw_c', 'evt_cw_a'])
      if (s.deadLetters.count) {
        // The dry run: how many a replay of the window would take.
        expect(await s.deadLetters.count(window)).toBe(2)
        expect(await s.deadLetters.count({ createdAfter: base })).toBe(4)
        expect(await s.deadLetters.count(parked)).toBe(3)
        expect(await s.deadLetters.count({ ...window, parkedBefore: a.parkedAt })).toBe(1)
      }
      const outcomes = await s.deadLetters.replayAll(window)
      expect(outcomes.map((outcome) => outcome.eventId)).toEqual(['evt_cw_b', 'evt_cw_c'])
      expect(outcomes.report).toMatchObject({ tried: 2, total: 2, remaining: 0, done: true })
      await s.settle?.()
      expect(['evt_cw_a', 'evt_cw_b', 'evt_cw_c', 'evt_cw_d', 'evt_cw_r'].map(s.runs)).toEqual([0, 1, 1, 0, 0])
      expect(ids(await s.deadLetters.list())).toEqual(['evt_cw_d', 'evt_cw_r', 'evt_cw_a'])
      if (s.deadLetters.count) expect(await s.deadLetters.count(window)).toBe(0)
    })

    it('answers not_found to the replay of an unknown id, running nothing', async () => {
      const s = await subject()
      expect(await s.deadLetters.replay('evt_dl_nothing')).toEqual({ eventId: 'evt_dl_nothing', status: 'not_found' })
      await s.settle?.()
      expect(s.runs('evt_dl_nothing')).toBe(0)
    })
  })
}
