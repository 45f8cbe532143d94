import { describe, expect, it } from 'vitest'
import { shardTags, slotOf } from './journal-layout.js'

describe('journal shard tags', () => {
  it("computes a Cluster's slot as Redis does (CRC16 XMODEM modulo 16384)", () => {
    // The CRC16 check value of the Redis Cluster specification, and slots a Cluster reports for these tags.
    expect(slotOf('123456789')).toBe(0x31c3)
    expect(slotOf('foo')).toBe(12182)
    expect(slotOf('user1000')).toBe(3443)
  })

  it('puts shard i in the i-th of equal ranges of slots, so primaries share the shards evenly', () => {
    for (const shards of [1, 3, 16, 100]) {
      const slots = shardTags(shards).map(slotOf)
      slots.forEach((slot, i) => {
        expect(slot).toBeGreaterThanOrEqual(Math.floor((i * 16384) / shards))
        expect(slot).toBeLessThan(Math.floor(((i + 1) * 16384) / shards))
      })
    }
    // Three primaries of a default Cluster (slots 0-5460, 5461-10922, 10923-16383): 5, 5 and 6 of the 16 shards.
    const owners = shardTags(16).map((tag) => Math.min(2, Math.floor(slotOf(tag) / 5461)))
    expect([0, 1, 2].map((owner) => owners.filter((o) => o === owner).length)).toEqual([5, 5, 6])
  })
})
