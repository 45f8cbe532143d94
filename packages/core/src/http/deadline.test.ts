import { describe, expect, it } from 'vitest'
import { Deadlines, type Pending } from './deadline.js'

interface Item extends Pending {
  name: string
}

const item = (name: string, due: number): Item => ({ name, due, prev: undefined, next: undefined, linked: false })
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** A deadline list that records the names of the items it expires, in order. */
function watching() {
  const expired: string[] = []
  return { expired, deadlines: new Deadlines<Item>((i) => expired.push(i.name)) }
}

describe('Deadlines', () => {
  it('expires each watched item once its due time passed, oldest first, and only those', async () => {
    const { expired, deadlines } = watching()
    const start = Date.now()
    const a = item('a', start + 20)
    const b = item('b', start + 40)
    // Far enough that a stalled machine cannot make it due by the first check.
    const c = item('c', start + 5000)
    deadlines.add(a)
    deadlines.add(b)
    deadlines.add(c)
    await sleep(120)
    expect(expired).toEqual(['a', 'b'])
    expect([a.linked, b.linked, c.linked]).toEqual([false, false, true])
    deadlines.remove(c)
    await sleep(100)
    expect(expired).toEqual(['a', 'b'])
  })

  it('never expires an item removed before its deadline, even the one the timer was set for', async () => {
    const { expired, deadlines } = watching()
    const start = Date.now()
    const first = item('first', start + 30)
    const second = item('second', start + 1000)
    deadlines.add(first)
    deadlines.add(second)
    deadlines.remove(first)
    await sleep(100)
    // The timer set for `first` fired: `second` is not due yet and stays watched.
    expect(expired).toEqual([])
    expect(second.linked).toBe(true)
    await sleep(1100 - (Date.now() - start))
    expect(expired).toEqual(['second'])
  })

  it('removes from the middle and the ends of the list', async () => {
    const { expired, deadlines } = watching()
    const due = Date.now() + 30
    const items = ['a', 'b', 'c', 'd', 'e'].map((name) => item(name, due))
    for (const i of items) deadlines.add(i)
    deadlines.remove(items[2] as Item)
    deadlines.remove(items[0] as Item)
    deadlines.remove(items[4] as Item)
    deadlines.remove(items[4] as Item)
    await sleep(80)
    expect(expired).toEqual(['b', 'd'])
  })

  it('expires an item added again after the list emptied (the idle timer is reused or re-armed)', async () => {
    const { expired, deadlines } = watching()
    const early = item('early', Date.now() + 200)
    deadlines.add(early)
    deadlines.remove(early)
    const later = item('later', Date.now() + 20)
    deadlines.add(later)
    await sleep(300)
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
