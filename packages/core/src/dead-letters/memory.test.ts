import { describe, expect, it } from 'vitest'
import { createWebhooks, memoryDeadLetterStore } from '../index.js'
import { durableStore, SECRET } from '../test-helpers/dead-letters.js'

describe('memoryDeadLetterStore', () => {
  const parked = (id: string, parkedAt = new Date()) => ({
    eventId: id,
    eventType: 'transaction_settled',
    body: new Uint8Array([1, 2, 3]),
    headers: {},
    code: 'schema_mismatch' as const,
    reason: 'r',
    createdAt: undefined,
    parkedAt,
  })

  it('is not durable, and refuses a maxEntries that is not a positive integer', () => {
    expect(memoryDeadLetterStore().durable).toBe(false)
    // The receiver's view says so too, for tools in another process (payhooks dead-letters).
    expect(createWebhooks({ secret: SECRET, deadLetters: memoryDeadLetterStore() }).deadLetters.durable).toBe(false)
    expect(createWebhooks({ secret: SECRET, deadLetters: durableStore().store }).deadLetters.durable).toBe(true)
    expect(createWebhooks({ secret: SECRET }).deadLetters.durable).toBeUndefined()
    expect(() => memoryDeadLetterStore({ maxEntries: 0 })).toThrow(
      new RangeError('memoryDeadLetterStore: maxEntries must be a positive integer'),
    )
  })

  it('holds at most maxEntries: the oldest replayed letter makes room, and with none replayed park throws', () => {
    const store = memoryDeadLetterStore({ maxEntries: 2 })
    store.park(parked('evt_1', new Date(1000)))
    store.park(parked('evt_2', new Date(2000)))
    expect(() => store.park(parked('evt_3'))).toThrow('memoryDeadLetterStore: full (2 parked letters)')
    store.park(parked('evt_2', new Date(3000)))
    expect(store.get('evt_2')?.parkCount).toBe(2)
    store.markReplayed('evt_1', new Date())
    store.park(parked('evt_3'))
    expect(store.size).toBe(2)
    expect(store.get('evt_1')).toBeUndefined()
    expect(store.list().map((letter) => letter.eventId)).toEqual(['evt_3', 'evt_2'])
  })

  it('hands out copies: changing a letter it returned changes nothing it holds', () => {
    const store = memoryDeadLetterStore()
    store.park(parked('evt_copy'))
    const letter = store.get('evt_copy')
    letter?.body.set([9, 9, 9])
    expect(Array.from(store.get('evt_copy')?.body ?? [])).toEqual([1, 2, 3])
  })
})
