import { describe, expect, it, vi } from 'vitest'
import { driveClock } from '../test-helpers/clock.js'
import { Deadlines, type Pending } from './deadline.js'

interface Item extends Pending {
  name: string
}

const item = (name: string, due: number): Item => ({ name, due, prev: undefined, next: undefined, linked: false })

/** A deadline list that records the names of the items it expires, in order. */
function watching() {
  const expired: string[] = []
  return { expired, deadlines: new Deadlines<Item>((i) => expired.push(i.name)) }
}

// The timer and the due times (Date.now) on one clock the test drives: a stall of a loaded machine between two checks
// cannot make an item due early (`second` below was 900 ms from it on a real clock).
describe('Deadlines', () => {
  it('expires each watched item once its due time passed, oldest first, and only those', () => {
    driveClock()
    const { expired, deadlines } = watching()
    const start = Date.now()
    const a = item('a', start + 20)
    const b = item('b', start + 40)
    const c = item('c', start + 5000)
    deadlines.add(a)
    deadlines.add(b)
    deadlines.add(c)
    vi.advanceTimersByTime(120)
    expect(expired).toEqual(['a', 'b'])
    expect([a.linked, b.linked, c.linked]).toEqual([false, false, true])
    deadlines.remove(c)
    vi.advanceTimersByTime(100)
    expect(expired).toEqual(['a', 'b'])
  })

  it('never expires an item removed before its deadline, even the one the timer was set for', () => {
    driveClock()
    const { expired, deadlines } = watching()
    const start = Date.now()
    const first = item('first', start + 30)
    const second = item('second', start + 1000)
    deadlines.add(first)
    deadlines.add(second)
    deadlines.remove(first)
    vi.advanceTimersByTime(100)
    // The timer set for `first` fired: `second` is not due yet and stays watched.
    expect(expired).toEqual([])
    expect(second.linked).toBe(true)
    vi.advanceTimersByTime(1000)
    expect(expired).toEqual(['second'])
  })

  it('removes from the middle and the ends of the list', () => {
    driveClock()
    const { expired, deadlines } = watching()
    const due = Date.now() + 30
    const items = ['a', 'b', 'c', 'd', 'e'].map((name) => item(name, due))
    for (const i of items) deadlines.add(i)
    deadlines.remove(items[2] as Item)
    deadlines.remove(items[0] as Item)
    deadlines.remove(items[4] as Item)
    deadlines.remove(items[4] as Item)
    vi.advanceTimersByTime(80)
    expect(expired).toEqual(['b', 'd'])
  })

  it('expires an item added again after the list emptied (the idle timer is reused or re-armed)', () => {
    driveClock()
    const { expired, deadlines } = watching()
    const early = item('early', Date.now() + 200)
    deadlines.add(early)
    deadlines.remove(early)
    const later = item('later', Date.now() + 20)
    deadlines.add(later)
    vi.advanceTimersByTime(300)
    expect(expired).toEqual(['later'])
  })

  it('lets the process exit while nothing is watched', async () => {
    const { spawnSync } = await import('node:child_process')
    // The built module (the test script builds before running): plain Node 20 cannot load the .ts.
    const url = new URL('../../dist/http/deadline.js', import.meta.url).href
    // The list emptied: its timer (due in 60 s) must not hold the process open.
    const script = `const { Deadlines } = await import(${JSON.stringify(url)}); const d = new Deadlines(() => {}); const p = { due: Date.now() + 60000, linked: false }; d.add(p); d.remove(p); console.log('done')`
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 20_000,
    })
    expect(child.stdout.trim()).toBe('done')
    // Killed by the 20 s timeout (signal set) if the timer kept it alive.
    expect(child.signal).toBeNull()
    expect(child.status).toBe(0)
  })
})
