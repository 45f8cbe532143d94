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

  it('keeps a done marker until its retention ends to the millisecond, and forgets it within a second after', () => {
    const time = clock(1_000_123)
    const store = memoryStore({ now: time.now, retentionMs: DEFAULT_RETENTION_MS + 777 })
    time.t += 456
    const claim = store.claim('evt_1', 60_000)
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    store.complete('evt_1', claim.token)
    time.t += DEFAULT_RETENTION_MS + 776
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'done' })
    time.t += 1001
    expect(store.claim('evt_1', 60_000).status).toBe('claimed')
  })

  it('refuses a retention shorter than the retry window', () => {
    expect(() => memoryStore({ retentionMs: 3600_000 })).toThrow(RangeError)
  })

  it('stays within maxEntries and always remembers the most recent half', () => {
    const store = memoryStore({ maxEntries: 100, logger: { error: () => {} } })
    for (let i = 0; i < 1000; i++) {
      const claim = store.claim(`evt_${i}`, 60_000)
      if (claim.status === 'claimed') store.complete(`evt_${i}`, claim.token)
      expect(store.size).toBeLessThanOrEqual(100)
    }
    for (let i = 950; i < 1000; i++) expect(store.claim(`evt_${i}`, 60_000)).toEqual({ status: 'done' })
    expect(store.claim('evt_0', 60_000).status).toBe('claimed')
  })

  it('extends a live claim for its holder only, from now', () => {
    const time = clock()
    const store = memoryStore({ now: time.now })
    const claim = store.claim('evt_1', 60_000)
    if (claim.status !== 'claimed') throw new Error('expected a claim')
    time.t += 50_000
    expect(store.extend('evt_1', 'someone-else', 60_000)).toBe(false)
    expect(store.extend('evt_1', claim.token, 60_000)).toBe(true)
    time.t += 50_000
    expect(store.claim('evt_1', 60_000)).toEqual({ status: 'processing', retryAfterMs: 10_000 })
    time.t += 10_000
    expect(store.extend('evt_1', claim.token, 60_000)).toBe(false) // ran out: the claim is gone
    expect(store.claim('evt_1', 60_000).status).toBe('claimed')
  })

  it('never forgets a claim in progress, however many events pass through a tiny store', () => {
    const warnings: string[] = []
    const store = memoryStore({ maxEntries: 2, logger: { error: (line) => warnings.push(line) } })
    const slow = store.claim('evt_slow', 60_000)
    if (slow.status !== 'claimed') throw new Error('expected a claim')
    for (let i = 0; i < 1000; i++) {
      const claim = store.claim(`evt_${i}`, 60_000)
      if (claim.status !== 'claimed') throw new Error(`expected evt_${i} to be claimed`)
      expect(store.complete(`evt_${i}`, claim.token)).toBe(true)
      // A retry of the slow event, meanwhile, finds it in progress: it does not run a second time.
      if (i % 100 === 0) expect(store.claim('evt_slow', 60_000).status).toBe('processing')
    }
    expect(store.extend('evt_slow', slow.token, 60_000)).toBe(true)
    expect(store.complete('evt_slow', slow.token)).toBe(true)
    expect(store.claim('evt_slow', 60_000)).toEqual({ status: 'done' })
    // Done markers stay within maxEntries (plus nothing in progress now).
    expect(store.size).toBeLessThanOrEqual(2)
  })

  it('says, through its logger, how long done markers last once maxEntries drops them early: at once, then hourly', () => {
    const time = clock()
    const warnings: string[] = []
    const store = memoryStore({
      maxEntries: 4,
      now: time.now,
      logger: { warn: (line) => warnings.push(line), error: () => {} },
    })
    const handle = (eventId: string) => {
      const claim = store.claim(eventId, 60_000)
      if (claim.status === 'claimed') store.complete(eventId, claim.token)
      time.t += 60_000
    }
    for (let i = 0; i < 4; i++) handle(`evt_${i}`)
    expect(warnings).toEqual([])
    for (let i = 4; i < 40; i++) handle(`evt_${i}`) // 36 more minutes
    expect(warnings).toEqual([
      '[payhooks] memoryStore: maxEntries (4) reached, so done markers last ~2 min to ~4 min, not ~73 h: a retry of an event handled longer ago than that runs its handlers again (the service retries for 72 h). Raise maxEntries to your peak events per second × 525600 (twice the retention in seconds; see "One process on memoryStore" in docs/guide/production.md), or use a shared store (redisStore, postgresStore).',
    ])
    for (let i = 40; i < 70; i++) handle(`evt_${i}`) // past the hour: said again
    expect(warnings).toHaveLength(2)
  })

  it('at 500 events/s on the default maxEntries says markers last ~2 to ~3 min, not 72 h; health() says so too', async () => {
    const time = clock()
    const warnings: string[] = []
    const store = memoryStore({ now: time.now, logger: { warn: (line) => warnings.push(line), error: () => {} } })
    expect((await store.health?.(new AbortController().signal))?.[1]).toMatchObject({
      name: 'memory_store_window',
      ok: true,
    })
    for (let i = 0; i < 160_000; i++) {
      const claim = store.claim(`evt_${i}`, 60_000)
      if (claim.status === 'claimed') store.complete(`evt_${i}`, claim.token)
      time.t += 2
    }
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain('done markers last ~2 min to ~3 min, not ~73 h')
    expect((await store.health?.(new AbortController().signal))?.[1]).toMatchObject({
      name: 'memory_store_window',
      ok: false,
      severity: 'warning',
      detail: 'maxEntries (100000) reached: done markers last ~2 min to ~3 min, not ~73 h',
    })
  })

  it('forgets done markers past their retention silently', () => {
    const time = clock()
    const warnings: string[] = []
    const store = memoryStore({ maxEntries: 4, now: time.now, logger: { error: (line) => warnings.push(line) } })
    for (let i = 0; i < 40; i++) {
      const claim = store.claim(`evt_${i}`, 60_000)
      if (claim.status === 'claimed') store.complete(`evt_${i}`, claim.token)
      time.t += DEFAULT_RETENTION_MS / 2
    }
    expect(warnings).toEqual([])
  })

  it('sweeps claims whose lease ran out and that nobody completed, so they do not pile up', () => {
    const time = clock()
    const store = memoryStore({ maxEntries: 10, now: time.now })
    for (let i = 0; i < 1000; i++) {
      store.claim(`evt_${i}`, 1000) // never completed nor released
      time.t += 100
      expect(store.size).toBeLessThanOrEqual(20)
    }
  })
})
