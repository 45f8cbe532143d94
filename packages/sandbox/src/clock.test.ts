import { describe, expect, it } from 'vitest'
import { createManualClock, isManualClock, realClock } from './clock.js'

describe('createManualClock', () => {
  it('starts at the given time and only moves with advance', async () => {
    const clock = createManualClock({ start: Date.parse('2026-11-02T15:00:00Z') })
    expect(clock.now()).toBe(Date.parse('2026-11-02T15:00:00Z'))
    await clock.advance(1500)
    expect(clock.now()).toBe(Date.parse('2026-11-02T15:00:01.500Z'))
  })

  it('runs due timers in time order, at their own time, and leaves later ones', async () => {
    const clock = createManualClock({ start: 0 })
    const ran: string[] = []
    clock.setTimeout(() => ran.push(`c@${clock.now()}`), 300)
    clock.setTimeout(() => ran.push(`a@${clock.now()}`), 100)
    clock.setTimeout(() => ran.push(`b@${clock.now()}`), 200)
    clock.setTimeout(() => ran.push(`late@${clock.now()}`), 1000)
    await clock.advance(300)
    expect(ran).toEqual(['a@100', 'b@200', 'c@300'])
    expect(clock.pending).toBe(1)
    await clock.advance(700)
    expect(ran.at(-1)).toBe('late@1000')
  })

  it('waits for a timer promise before the next instant, and runs same-instant timers together', async () => {
    const clock = createManualClock({ start: 0 })
    const events: string[] = []
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    clock.setTimeout(async () => {
      events.push('first starts')
      await gate
      events.push('first ends')
    }, 10)
    // Same instant: starts while the first still waits, and releases it.
    clock.setTimeout(() => {
      events.push('second starts')
      release()
    }, 10)
    clock.setTimeout(() => events.push('next instant'), 11)
    await clock.advance(20)
    expect(events).toEqual(['first starts', 'second starts', 'first ends', 'next instant'])
  })

  it('runs timers scheduled by timers within the same advance, and not beyond it', async () => {
    const clock = createManualClock({ start: 0 })
    const times: number[] = []
    const tick = () => {
      times.push(clock.now())
      clock.setTimeout(tick, 1000)
    }
    clock.setTimeout(tick, 0)
    await clock.advance(3500)
    expect(times).toEqual([0, 1000, 2000, 3000])
    expect(clock.now()).toBe(3500)
  })

  it('never runs a cancelled timer', async () => {
    const clock = createManualClock({ start: 0 })
    let ran = false
    clock
      .setTimeout(() => {
        ran = true
      }, 10)
      .cancel()
    await clock.advance(100)
    expect(ran).toBe(false)
    expect(clock.pending).toBe(0)
  })

  it('serializes concurrent advances so time only moves forward', async () => {
    const clock = createManualClock({ start: 0 })
    const seen: number[] = []
    clock.setTimeout(() => seen.push(clock.now()), 50)
    clock.setTimeout(() => seen.push(clock.now()), 150)
    await Promise.all([clock.advance(100), clock.advance(100)])
    expect(seen).toEqual([50, 150])
    expect(clock.now()).toBe(200)
  })

  it('rejects with the error a timer threw', async () => {
    const clock = createManualClock({ start: 0 })
    clock.setTimeout(() => {
      throw new Error('boom')
    }, 1)
    await expect(clock.advance(5)).rejects.toThrow('boom')
    await expect(clock.advance(-1)).rejects.toThrow(RangeError)
  })

  it('gives up on timers that reschedule themselves at the same instant', async () => {
    const clock = createManualClock({ start: 0, maxTimersPerAdvance: 50 })
    const loop = () => {
      clock.setTimeout(loop, 0)
    }
    clock.setTimeout(loop, 0)
    await expect(clock.advance(1)).rejects.toThrow('more than 50 timers')
  })
})

describe('realClock', () => {
  it('is not manual and runs its timers', async () => {
    expect(isManualClock(realClock)).toBe(false)
    expect(isManualClock(createManualClock())).toBe(true)
    await new Promise<void>((resolve) => realClock.setTimeout(resolve, 1))
    let ran = false
    realClock
      .setTimeout(() => {
        ran = true
      }, 1)
      .cancel()
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(ran).toBe(false)
  })
})
