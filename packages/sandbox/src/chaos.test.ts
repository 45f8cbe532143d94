import { afterEach, describe, expect, it } from 'vitest'
import { createSandbox } from './server.js'
import { closeAll, HOUR, receiverOf, sandboxOf } from './test-sandbox.js'
import type { SandboxLogEntry } from './types.js'

afterEach(closeAll)

describe('sandbox chaos', () => {
  async function chaosRun(seed: number) {
    const sandbox = sandboxOf({ chaos: { seed, duplicateRate: 0.3, reorderRate: 0.5, maxDelayMs: 1000 } })
    const receiver = await receiverOf()
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const emitted: string[] = []
    for (let i = 0; i < 40; i++) emitted.push((await sandbox.emit('transaction_settled')).eventId)
    await sandbox.advance(2000)
    const shape = (entry: SandboxLogEntry) =>
      entry.deliveries.flatMap((d) => d.attempts.map((a) => `${a.kind}@${a.time - entry.emittedTime}`)).join(',')
    return { sandbox, receiver, emitted, shapes: sandbox.log().map(shape) }
  }

  it('duplicates and reorders deliveries, the same way for the same seed', async () => {
    const first = await chaosRun(7)
    const again = await chaosRun(7)
    const other = await chaosRun(8)
    expect(again.shapes).toEqual(first.shapes)
    expect(other.shapes).not.toEqual(first.shapes)

    const arrived = first.receiver.requests.map((r) => r.json?.event_id as string)
    // Every event arrived, some twice, and not in the order they were emitted.
    expect(new Set(arrived)).toEqual(new Set(first.emitted))
    expect(arrived.length).toBeGreaterThan(first.emitted.length)
    const firstArrivals = arrived.filter((id, index) => arrived.indexOf(id) === index)
    expect(firstArrivals).not.toEqual(first.emitted)

    const log = first.sandbox.log()
    const attempts = log.flatMap((e) => e.deliveries.flatMap((d) => d.attempts.map((a) => ({ ...a, entry: e, d }))))
    const duplicates = attempts.filter((a) => a.kind === 'duplicate')
    expect(duplicates.length).toBe(arrived.length - first.emitted.length)
    // Some copies went out together with the first send, some later.
    expect(duplicates.some((a) => a.time === a.d.firstAttemptTime)).toBe(true)
    expect(duplicates.some((a) => a.time > a.d.firstAttemptTime)).toBe(true)
    // Delays stay within maxDelayMs, so the hourly grid is unchanged.
    for (const entry of log) {
      for (const delivery of entry.deliveries) {
        expect(delivery.state).toBe('delivered')
        expect(delivery.firstAttemptTime - entry.emittedTime).toBeLessThanOrEqual(1000)
      }
    }
  })

  it('is off by default, and exposes the seed when on', () => {
    expect(sandboxOf().chaos).toBeUndefined()
    const chaos = sandboxOf({ chaos: true }).chaos
    expect(chaos).toMatchObject({ duplicateRate: 0.2, reorderRate: 0.3, maxDelayMs: 2000 })
    expect(Number.isInteger(chaos?.seed)).toBe(true)
    expect(() => createSandbox({ chaos: { maxDelayMs: HOUR } })).toThrow(RangeError)
  })
})
