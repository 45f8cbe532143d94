import { describe, expect, it } from 'vitest'
import { deadLetterCursor, deadLetterQuery } from './query.js'

describe('deadLetterQuery', () => {
  it('fills in the defaults: parked letters, 100 at most, from the first', () => {
    expect(deadLetterQuery()).toEqual({ status: 'parked', limit: 100, offset: 0, order: 'newest' })
    expect(deadLetterQuery({ eventType: 'x', limit: 5 })).toEqual({
      eventType: 'x',
      status: 'parked',
      limit: 5,
      offset: 0,
      order: 'newest',
    })
  })

  it('decodes a keyset cursor into the position it names, and refuses any other text', () => {
    const after = deadLetterCursor({ parkedAt: new Date(1_700_000_000_123), eventId: 'evt_ü/+' })
    expect(deadLetterQuery({ after, order: 'oldest' })).toMatchObject({
      order: 'oldest',
      position: { parkedAt: 1_700_000_000_123, eventId: 'evt_ü/+' },
    })
    expect(deadLetterQuery({ after })).not.toHaveProperty('after')
    const forged = [after.slice(1), '', 'W10', btoa('[1.5,"evt"]'), btoa('[1,""]'), btoa('{}'), 'a b']
    for (const bad of forged) expect(() => deadLetterQuery({ after: bad }, 'q')).toThrow(TypeError)
  })

  it.each([
    [{ status: 'done' }, TypeError, "q: status must be 'parked', 'replayed' or 'all'"],
    [{ code: 'oops' }, TypeError, "q: code must be 'schema_mismatch', 'handler_failed', 'stale_event' or 'paused'"],
    [{ limit: 0 }, RangeError, 'q: limit must be a positive integer'],
    [{ offset: 1.5 }, RangeError, 'q: offset must be >= 0'],
    [{ parkedAfter: new Date('nope') }, TypeError, 'q: parkedAfter must be a valid Date'],
    [{ parkedBefore: '2026-01-01' }, TypeError, 'q: parkedBefore must be a valid Date'],
    [{ order: 'up' }, TypeError, "q: order must be 'newest' or 'oldest'"],
  ])('refuses %o', (query, type, message) => {
    expect(() => deadLetterQuery(query as never, 'q')).toThrow(new type(message))
  })
})
