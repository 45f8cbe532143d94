import { afterEach, describe, expect, it } from 'vitest'
import { createSandbox } from './server.js'
import { cleanup, closeAll, HOUR, only, receiverOf, sandboxOf } from './test-sandbox.js'

afterEach(closeAll)

describe('sandbox lifecycle', () => {
  it('refuses to advance a real clock', async () => {
    const sandbox = createSandbox()
    cleanup.push(() => sandbox.close())
    await expect(sandbox.advance(1)).rejects.toThrow('real clock')
  })

  it('stops pending retries on close and refuses new emits', async () => {
    const sandbox = sandboxOf()
    const receiver = await receiverOf(() => 500)
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    await sandbox.emit('transaction_settled')
    await sandbox.close()
    await sandbox.close()
    await sandbox.advance(5 * HOUR)
    expect(receiver.requests).toHaveLength(1)
    await expect(sandbox.emit('transaction_settled')).rejects.toThrow('closed')
  })

  it('waits for chaos-delayed sends on a real clock with idle()', async () => {
    const sandbox = createSandbox({ chaos: { seed: 3, reorderRate: 1, duplicateRate: 0, maxDelayMs: 30 } })
    cleanup.push(() => sandbox.close())
    const receiver = await receiverOf()
    sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
    const entries = await Promise.all([1, 2, 3].map(() => sandbox.emit('transaction_settled')))
    // reorderRate 1: every first send is delayed, so nothing went out during emit.
    expect(entries.every((e) => only(e.deliveries).attempts.length === 0)).toBe(true)
    await sandbox.idle()
    expect(receiver.requests).toHaveLength(3)
    expect(sandbox.log().every((e) => only(e.deliveries).state === 'delivered')).toBe(true)
  })

  it('validates its options', () => {
    expect(() => createSandbox({ resellers: [{ key: 'no-pipe', merchantIds: [] }] })).toThrow('reseller key')
    expect(() => createSandbox({ merchants: [{ id: 1, username: 'a:b', apiKey: 'k' }] })).toThrow('merchant')
    expect(() => createSandbox({ deliveryTimeoutMs: 0 })).toThrow(RangeError)
  })
})
