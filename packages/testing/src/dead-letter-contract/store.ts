import { type DeadLetterStore, deadLetterCursor, type ParkedEvent, SIGNATURE_HEADER } from '@payhooks/core'
import { expect, it } from 'vitest'
import type { Fleet } from './types.js'

function parked(id: string, overrides: Partial<ParkedEvent> = {}): ParkedEvent {
  return {
    eventId: id,
    eventType: 'transaction_settled',
    body: new TextEncoder().encode(`{"event_id":"${id}"}`),
    headers: { [SIGNATURE_HEADER]: 'A'.repeat(64), 'content-type': 'application/json' },
    code: 'schema_mismatch',
    reason: `transaction_settled ${id} does not match its schema`,
    createdAt: new Date('2026-11-03T08:00:00.000Z'),
    parkedAt: new Date('2026-11-04T08:00:00.000Z'),
    ...overrides,
  }
}

/** The store's own tests: the exact bytes kept, parking again in place, `markReplayed`, listing, sharing. */
export function storeTests(fleet: (namespace?: string) => Fleet): void {
  it('keeps the exact bytes, the headers, code, reason and times of a parked event', async () => {
    const store = await fleet()()
    // UTF-8 text, then bytes that are no UTF-8 at all: nothing may be decoded and re-encoded.
    const body = new Uint8Array([...new TextEncoder().encode('{"name":"Zoë 💶"}'), 0xff, 0x00, 0x80, 0xc3])
    const event = parked('evt_bytes', { body })
    const returned = await store.park(event)
    const letter = await store.get('evt_bytes')
    // park answers the letter as it stands, which tells the receiver a letter it kept.
    expect(returned).toEqual(letter)
    expect(letter).toBeDefined()
    expect(Array.from(letter?.body ?? [])).toEqual(Array.from(body))
    expect(letter).toMatchObject({
      eventId: 'evt_bytes',
      eventType: 'transaction_settled',
      headers: event.headers,
      code: 'schema_mismatch',
      reason: event.reason,
      parkCount: 1,
      status: 'parked',
    })
    expect(letter?.createdAt?.toISOString()).toBe('2026-11-03T08:00:00.000Z')
    expect(letter?.parkedAt.toISOString()).toBe('2026-11-04T08:00:00.000Z')
    expect(letter?.firstParkedAt.toISOString()).toBe('2026-11-04T08:00:00.000Z')
    expect(letter?.replayedAt).toBeUndefined()

    await store.park(parked('evt_no_created_at', { createdAt: undefined, code: 'handler_failed', headers: {} }))
    const bare = await store.get('evt_no_created_at')
    expect(bare?.createdAt).toBeUndefined()
    expect(bare?.headers).toEqual({})
    expect(bare?.code).toBe('handler_failed')
    expect(await store.get('evt_never_parked')).toBeUndefined()
    expect(typeof store.durable).toBe('boolean')
  })

  it('keeps letters of every code the receiver parks with, and lists them by code', async () => {
    const store = await fleet()()
    const codes = ['schema_mismatch', 'handler_failed', 'stale_event'] as const
    for (const code of codes) await store.park(parked(`evt_code_${code}`, { code }))
    for (const code of codes) {
      expect((await store.get(`evt_code_${code}`))?.code).toBe(code)
      expect((await store.list({ code })).map((letter) => letter.eventId)).toEqual([`evt_code_${code}`])
    }
  })

  it('parks an event again in place: one letter, the latest headers and reason, the first time kept, the count up', async () => {
    const store = await fleet()()
    await store.park(parked('evt_again'))
    const again = await store.park(
      parked('evt_again', {
        headers: { [SIGNATURE_HEADER]: 'B'.repeat(64) },
        code: 'handler_failed',
        reason: 'second reason',
        parkedAt: new Date('2026-11-05T09:00:00.000Z'),
      }),
    )
    const letter = await store.get('evt_again')
    expect(again).toEqual(letter)
    expect(new TextDecoder().decode(letter?.body)).toBe('{"event_id":"evt_again"}')
    expect(letter).toMatchObject({ code: 'handler_failed', reason: 'second reason', parkCount: 2, status: 'parked' })
    expect(letter?.headers).toEqual({ [SIGNATURE_HEADER]: 'B'.repeat(64) })
    expect(letter?.firstParkedAt.toISOString()).toBe('2026-11-04T08:00:00.000Z')
    expect(letter?.parkedAt.toISOString()).toBe('2026-11-05T09:00:00.000Z')
    expect((await store.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_again'])
  })

  it('keeps the first bytes parked: a copy of other bytes leaves the letter as it is, and park answers it', async () => {
    const store = await fleet()()
    await store.park(parked('evt_other_bytes'))
    const first = await store.get('evt_other_bytes')
    const other = new TextEncoder().encode('{"event_id":"evt_other_bytes","amount":999}')
    const kept = await store.park(
      parked('evt_other_bytes', {
        body: other,
        headers: { [SIGNATURE_HEADER]: 'B'.repeat(64) },
        code: 'stale_event',
        reason: 'other reason',
        parkedAt: new Date('2026-11-05T09:00:00.000Z'),
      }),
    )
    expect(await store.get('evt_other_bytes')).toEqual(first)
    expect(kept).toEqual(first)
  })

  it('marks a letter replayed: out of the parked list, in the replayed one, and parking it again leaves it replayed', async () => {
    const store = await fleet()()
    await store.park(parked('evt_marked'))
    await store.park(parked('evt_waiting', { parkedAt: new Date('2026-11-04T07:00:00.000Z') }))
    const at = new Date('2026-11-06T10:00:00.000Z')
    expect(await store.markReplayed('evt_marked', at)).toBe(true)
    expect(await store.markReplayed('evt_never_parked', at)).toBe(false)
    const letter = await store.get('evt_marked')
    expect(letter?.status).toBe('replayed')
    expect(letter?.replayedAt?.toISOString()).toBe('2026-11-06T10:00:00.000Z')
    expect((await store.list()).map((l) => l.eventId)).toEqual(['evt_waiting'])
    expect((await store.list({ status: 'replayed' })).map((l) => l.eventId)).toEqual(['evt_marked'])
    expect((await store.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_marked', 'evt_waiting'])

    // The letter is the durable evidence that the event was handled: a later delivery (after the dedupe store's
    // retention) never makes it parked, nor replayable, again; with the same bytes or others.
    const replayed = await store.get('evt_marked')
    const other = new TextEncoder().encode('{"event_id":"evt_marked","amount":999}')
    for (const body of [replayed?.body as Uint8Array, other]) {
      const kept = await store.park(parked('evt_marked', { body, parkedAt: new Date('2026-11-07T10:00:00.000Z') }))
      expect(await store.get('evt_marked')).toEqual(replayed)
      expect(kept).toEqual(replayed)
    }
    expect((await store.list()).map((l) => l.eventId)).toEqual(['evt_waiting'])
  })

  it('lists newest first, with filters on type, code, status and time, in pages; a bad query throws', async () => {
    const store = await fleet()()
    const base = Date.parse('2026-11-04T00:00:00.000Z')
    const types = ['transaction_settled', 'transaction_returned', 'sale_created_from_batch']
    for (let i = 0; i < 12; i++) {
      await store.park(
        parked(`evt_list_${String(i).padStart(2, '0')}`, {
          eventType: types[i % 3] as string,
          code: i % 2 === 0 ? 'schema_mismatch' : 'handler_failed',
          parkedAt: new Date(base + i * 60_000),
        }),
      )
    }
    const listIds = async (query: Parameters<DeadLetterStore['list']>[0]) =>
      (await store.list(query)).map((l) => l.eventId.slice('evt_list_'.length))
    expect(await listIds(undefined)).toEqual(['11', '10', '09', '08', '07', '06', '05', '04', '03', '02', '01', '00'])
    expect(await listIds({ eventType: 'transaction_returned' })).toEqual(['10', '07', '04', '01'])
    expect(await listIds({ code: 'handler_failed' })).toEqual(['11', '09', '07', '05', '03', '01'])
    expect(await listIds({ eventType: 'transaction_settled', code: 'schema_mismatch' })).toEqual(['06', '00'])
    expect(await listIds({ parkedAfter: new Date(base + 9 * 60_000) })).toEqual(['11', '10', '09'])
    expect(await listIds({ parkedBefore: new Date(base + 2 * 60_000) })).toEqual(['01', '00'])
    expect(
      await listIds({ parkedAfter: new Date(base + 3 * 60_000), parkedBefore: new Date(base + 8 * 60_000) }),
    ).toEqual(['07', '06', '05', '04', '03'])
    expect(await listIds({ limit: 3 })).toEqual(['11', '10', '09'])
    expect(await listIds({ limit: 3, offset: 3 })).toEqual(['08', '07', '06'])
    expect(await listIds({ code: 'handler_failed', limit: 2, offset: 2 })).toEqual(['07', '05'])
    expect(await listIds({ offset: 12 })).toEqual([])
    expect(await listIds({ status: 'replayed' })).toEqual([])
    expect(await listIds({ eventType: 'payment_created' })).toEqual([])

    await expect((async () => store.list({ limit: 0 }))()).rejects.toThrow(RangeError)
    await expect((async () => store.list({ offset: -1 }))()).rejects.toThrow(RangeError)
    await expect((async () => store.list({ status: 'gone' as 'all' }))()).rejects.toThrow(TypeError)
  })

  it('deletes a letter when the store can: gone from get and every list, false the second time', async () => {
    const store = await fleet()()
    if (!store.delete) return
    await store.park(parked('evt_deleted'))
    await store.park(parked('evt_kept', { parkedAt: new Date('2026-11-04T09:00:00Z') }))
    expect(await store.delete('evt_deleted')).toBe(true)
    expect(await store.get('evt_deleted')).toBeUndefined()
    expect((await store.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_kept'])
    expect(await store.delete('evt_deleted')).toBe(false)
    await store.park(parked('evt_deleted'))
    expect((await store.get('evt_deleted'))?.parkCount).toBe(1)
  })

  it('counts the letters a list would return, by status, code, event type and time, when the store can', async () => {
    const store = await fleet()()
    if (!store.count) return
    expect(await store.count()).toBe(0)
    await store.park(parked('evt_n1', { parkedAt: new Date('2026-11-04T08:00:00Z') }))
    await store.park(parked('evt_n2', { code: 'handler_failed', parkedAt: new Date('2026-11-04T09:00:00Z') }))
    await store.park(
      parked('evt_n3', { eventType: 'transaction_returned', parkedAt: new Date('2026-11-04T10:00:00Z') }),
    )
    await store.park(parked('evt_n1', { parkedAt: new Date('2026-11-04T08:30:00Z') })) // parked again: one letter
    expect(await store.markReplayed('evt_n2', new Date())).toBe(true)
    expect(await store.count()).toBe(2)
    expect(await store.count({ status: 'all' })).toBe(3)
    expect(await store.count({ status: 'replayed' })).toBe(1)
    expect(await store.count({ code: 'schema_mismatch' })).toBe(2)
    expect(await store.count({ code: 'handler_failed', status: 'all' })).toBe(1)
    expect(await store.count({ eventType: 'transaction_returned' })).toBe(1)
    expect(await store.count({ parkedAfter: new Date('2026-11-04T08:30:00Z') })).toBe(2)
    expect(await store.count({ parkedBefore: new Date('2026-11-04T08:30:00Z') })).toBe(0)
    expect(await store.count({ status: 'all', parkedBefore: new Date('2026-11-04T10:00:00Z') })).toBe(2)
    for (const query of [{}, { status: 'all' as const }, { code: 'schema_mismatch' as const }]) {
      expect(await store.count(query)).toBe((await store.list({ ...query, limit: 1000 })).length)
    }
    await expect((async () => store.count?.({ status: 'gone' as 'all' }))()).rejects.toThrow(TypeError)
  })

  it('pages by keyset: newest or oldest first past a cursor, ties by eventId, with filters; a bad cursor throws', async () => {
    const store = await fleet()()
    const base = Date.parse('2026-11-04T00:00:00.000Z')
    // Three letters share each time: the cursor must break ties by eventId, never skip nor repeat one.
    for (let i = 0; i < 12; i++) {
      await store.park(
        parked(`evt_key_${String(i).padStart(2, '0')}`, {
          code: i % 3 === 0 ? 'handler_failed' : 'schema_mismatch',
          parkedAt: new Date(base + Math.floor(i / 3) * 1000),
        }),
      )
    }
    expect(store.keysetPaging).toBe(true)
    const walk = async (query: Parameters<DeadLetterStore['list']>[0], limit: number) => {
      const seen: string[] = []
      let after: string | undefined
      for (;;) {
        const page = await store.list({ ...query, limit, ...(after ? { after } : {}) })
        seen.push(...page.map((letter) => letter.eventId.slice('evt_key_'.length)))
        const last = page[page.length - 1]
        if (page.length < limit || !last) return seen
        after = deadLetterCursor(last)
      }
    }
    const newest = ['11', '10', '09', '08', '07', '06', '05', '04', '03', '02', '01', '00']
    for (const limit of [1, 2, 5, 12]) {
      expect(await walk({}, limit)).toEqual(newest)
      expect(await walk({ order: 'oldest' }, limit)).toEqual([...newest].reverse())
    }
    expect(await walk({ code: 'handler_failed' }, 2)).toEqual(['09', '06', '03', '00'])
    expect(await walk({ code: 'handler_failed', order: 'oldest' }, 3)).toEqual(['00', '03', '06', '09'])
    expect(await walk({ parkedBefore: new Date(base + 2000), order: 'oldest' }, 4)).toEqual([
      '00',
      '01',
      '02',
      '03',
      '04',
      '05',
    ])
    expect(await walk({ parkedAfter: new Date(base + 2000) }, 4)).toEqual(['11', '10', '09', '08', '07', '06'])
    // A cursor's letter need not exist any more: the page starts past where it stood.
    if (store.delete) expect(await store.delete('evt_key_06')).toBe(true)
    const past = deadLetterCursor({ parkedAt: new Date(base + 2000), eventId: 'evt_key_06' })
    expect((await store.list({ after: past, limit: 2 })).map((l) => l.eventId)).toEqual(['evt_key_05', 'evt_key_04'])
    expect((await store.list({ after: past, limit: 2, order: 'oldest' })).map((l) => l.eventId)).toEqual([
      'evt_key_07',
      'evt_key_08',
    ])
    expect((await store.list({ after: past, limit: 1, offset: 2 })).map((l) => l.eventId)).toEqual(['evt_key_03'])
    await expect((async () => store.list({ after: 'not a cursor' }))()).rejects.toThrow(TypeError)
    await expect((async () => store.list({ order: 'sideways' as 'oldest' }))()).rejects.toThrow(TypeError)
  })

  it('keeps its counts with each park, park again, replay and delete, by status, code and event type', async () => {
    const store = await fleet()()
    if (!store.count) return
    const counts = async () => ({
      parked: await store.count?.(),
      replayed: await store.count?.({ status: 'replayed' }),
      all: await store.count?.({ status: 'all' }),
      failed: await store.count?.({ code: 'handler_failed' }),
      returned: await store.count?.({ eventType: 'transaction_returned' }),
      both: await store.count?.({ code: 'handler_failed', eventType: 'transaction_returned', status: 'all' }),
    })
    await store.park(parked('evt_c1'))
    await store.park(parked('evt_c2', { code: 'handler_failed', eventType: 'transaction_returned' }))
    await store.park(parked('evt_c3', { eventType: 'transaction_returned' }))
    expect(await counts()).toEqual({ parked: 3, replayed: 0, all: 3, failed: 1, returned: 2, both: 1 })
    // Parked again with another code: moves between the code's counts, still one letter.
    await store.park(parked('evt_c3', { code: 'handler_failed', eventType: 'transaction_returned' }))
    expect(await counts()).toEqual({ parked: 3, replayed: 0, all: 3, failed: 2, returned: 2, both: 2 })
    await store.markReplayed('evt_c2', new Date())
    await store.markReplayed('evt_c2', new Date()) // twice: counted once
    expect(await counts()).toEqual({ parked: 2, replayed: 1, all: 3, failed: 1, returned: 1, both: 2 })
    await store.park(parked('evt_c2', { code: 'handler_failed', eventType: 'transaction_returned' })) // stays replayed
    await store.park(parked('evt_c1', { body: new TextEncoder().encode('{"other":1}'), code: 'handler_failed' }))
    expect(await counts()).toEqual({ parked: 2, replayed: 1, all: 3, failed: 1, returned: 1, both: 2 })
    if (!store.delete) return
    expect(await store.delete('evt_c2')).toBe(true)
    expect(await store.delete('evt_c3')).toBe(true)
    expect(await store.delete('evt_c3')).toBe(false)
    expect(await counts()).toEqual({ parked: 1, replayed: 0, all: 1, failed: 0, returned: 0, both: 0 })
  })

  it('counts letters parked at once from several instances, one event parked by each of them counted once', async () => {
    const instance = fleet()
    const stores = await Promise.all([0, 1, 2, 3].map((i) => instance(i)))
    const store = stores[0] as DeadLetterStore
    if (!store.count) return
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (stores[i % 4] as DeadLetterStore).park(
          parked(`evt_burst_${i}`, { code: i % 2 ? 'handler_failed' : 'schema_mismatch' }),
        ),
      ),
    )
    await Promise.all(stores.map((each) => each.park(parked('evt_burst_same', { code: 'handler_failed' }))))
    expect((await store.get('evt_burst_same'))?.parkCount).toBe(4)
    expect(await store.count()).toBe(41)
    expect(await store.count({ code: 'handler_failed' })).toBe(21)
    expect(await store.count({ code: 'handler_failed' })).toBe((await store.list({ code: 'handler_failed' })).length)
  })

  it('shares its letters between the instances of one namespace', async () => {
    const instance = fleet()
    const [first, second] = [await instance(0), await instance(1)]
    await first.park(parked('evt_shared'))
    expect((await second.get('evt_shared'))?.eventId).toBe('evt_shared')
    expect(await second.markReplayed('evt_shared', new Date())).toBe(true)
    expect((await first.get('evt_shared'))?.status).toBe('replayed')
    const late = await instance(2)
    await late.init?.()
    expect((await late.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_shared'])
  })
}
