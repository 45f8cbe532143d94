import { describe, expect, it } from 'vitest'
import { DEFAULT_RETENTION_MS, memoryStore } from './store.js'

function clock(start = 1_000_000) {
  const c = { t: start, now: () => c.t }
  return c
}

describe('memoryStore', () => {
  it('claims once, answers processing with the remaining lease, then done after complete', () => {
    const time = clock()
    const store = memoryStore({ now: time.now })
    const first = store.claim('evt_1', 60_000)
    expect(first.status).toBe('claimed')
    time.t += 10_000
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'processing', retryAfterMs: 50_000 })
    if (first.status !== 'claimed') throw new Error('unreachable')
    expect(store.complete('evt_1', first.token)).toBe(true)
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'done' })
  })

  it('lets only the holder of the token complete or release', () => {
    const store = memoryStore()
    const claim = store.claim('evt_1', 60_000)
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    expect(store.complete('evt_1', 'someone-else')).toBe(false)
    expect(store.release('evt_1', 'someone-else')).toBe(false)
    expect(store.claim('evt_1', 60_000).status).toBe('processing')
    expect(store.release('evt_1', claim.token)).toBe(true)
    expect(store.claim('evt_1', 60_000).status).toBe('claimed')
  })

  it('expires the claim of a holder that died, and the late holder can no longer complete', () => {
    const time = clock()
    const store = memoryStore({ now: time.now })
    const dead = store.claim('evt_1', 60_000)
    if (dead.status !== 'claimed') throw new Error('expected a claim')
    time.t += 60_000
    const retry = store.claim('evt_1', 60_000)
    expect(retry.status).toBe('claimed')
    expect(store.complete('evt_1', dead.token)).toBe(false)
  })

  it('remembers done events for the whole 72-hour retry window and forgets them after retention', () => {
    const time = clock()
    const store = memoryStore({ now: time.now })
    const claim = store.claim('evt_1', 60_000)
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    store.complete('evt_1', claim.token)
    time.t += 72 * 3600_000
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'done' })
    time.t += DEFAULT_RETENTION_MS - 72 * 3600_000
    expect(store.claim('evt_1', 60_000).status).toBe('claimed')
  })

  it('refuses a retention shorter than the retry window', () => {
    expect(() => memoryStore({ retentionMs: 3600_000 })).toThrow(RangeError)
  })

  it('stays within maxEntries and always remembers the most recent half', () => {
    const store = memoryStore({ maxEntries: 100 })
    for (let i = 0; i < 1000; i++) {
      const claim = store.claim(`evt_${i}`, 60_000)
      if (claim.status === 'claimed') store.complete(`evt_${i}`, claim.token)
      expect(store.size).toBeLessThanOrEqual(100)
    }
    for (let i = 950; i < 1000; i++) expect(store.claim(`evt_${i}`, 60_000)).toEqual({ status: 'done' })
    expect(store.claim('evt_0', 60_000).status).toBe('claimed')
  })

  it('keeps an in-flight claim across a generation change while it is recent', () => {
    const store = memoryStore({ maxEntries: 10 })
    const claim = store.claim('evt_slow', 60_000)
    for (let i = 0; i < 4; i++) store.claim(`evt_${i}`, 60_000)
    expect(store.claim('evt_slow', 60_000).status).toBe('processing')
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    expect(store.complete('evt_slow', claim.token)).toBe(true)
    expect(store.claim('evt_slow', 60_000)).toEqual({ status: 'done' })
  })
})
