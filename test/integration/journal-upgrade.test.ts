// A rolling upgrade of a fleet sharing redisJournal (issue 49): instances of the previous release (its writer vendored
// in test/fixtures/journal-before.ts) keep writing the lists and sorted sets of its layout while instances of this
// release write streams; this release's reads (an event's answers, lists with filters and cursors, counts) see both,
// on a standalone Redis and on a Cluster.
import type { Journal, JournalRecord } from '@payhooks/core'
import { redisJournal } from '@payhooks/redis'
import { Cluster, Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { previousJournalWrite } from '../fixtures/journal-before.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL as string
const nodes = (process.env.REDIS_CLUSTER_NODES as string).split(',').map((node) => {
  const [host, port] = node.split(':')
  return { host: host as string, port: Number(port) }
})
const MINUTE = 60_000
const HOUR = 3_600_000
const clients: (Redis | Cluster)[] = []
afterAll(async () => {
  await Promise.all(clients.map((client) => client.quit().catch(() => client.disconnect())))
})

let sequence = 0
function record(fields: Partial<JournalRecord> & { eventId: string; at: number; instance: string }): JournalRecord {
  sequence++
  return {
    id: `upgrade${sequence.toString(36).padStart(8, '0')}`,
    eventType: 'transaction_settled',
    createdAt: '2026-11-27T10:00:00Z',
    status: 200,
    outcome: 'processed',
    durationMs: 4,
    secretIndex: 0,
    ...fields,
  }
}

const sortNewest = (records: JournalRecord[]) => [...records].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))

describe.each([
  ['Redis', () => new Redis(REDIS_URL)],
  ['a Redis Cluster', () => new Cluster(nodes)],
])('a fleet upgrading its journal on %s', (_, connect) => {
  it("reads the previous release's answers beside its own: an event's, lists, pages and counts", async () => {
    const prefix = `journal-upgrade:${Date.now().toString(36)}:${Math.random().toString(36).slice(2)}:`
    const client = connect()
    clients.push(client)
    const writeBefore = previousJournalWrite(client, prefix)
    const journal: Journal = redisJournal(client, { ...UNHURRIED, keyPrefix: prefix })
    const hour = Math.floor(Date.now() / HOUR) * HOUR
    // Two hours of a fleet: old instances answered first, then both kinds side by side, then new ones alone.
    const before: [JournalRecord, JournalRecord, JournalRecord, JournalRecord] = [
      record({ eventId: 'evt_1', at: hour - 40 * MINUTE, outcome: 'handler_failed', status: 500, instance: 'old-1' }),
      record({ eventId: 'evt_2', at: hour - 30 * MINUTE, instance: 'old-1' }),
      record({ eventId: 'evt_1', at: hour - 20 * MINUTE, instance: 'old-2' }),
      record({ eventId: 'evt_3', at: hour + 1000, outcome: 'duplicate', copies: 5, instance: 'old-2' }),
    ]
    const after: [JournalRecord, JournalRecord, JournalRecord] = [
      record({ eventId: 'evt_1', at: hour - 10 * MINUTE, outcome: 'duplicate', instance: 'new-1' }),
      record({ eventId: 'evt_3', at: hour + 1000, instance: 'new-1', secretLabel: 'sub_2' }),
      record({ eventId: 'evt_4', at: hour + 2000, outcome: 'handler_failed', status: 500, instance: 'new-2' }),
    ]
    await writeBefore(before)
    await journal.write(after)
    const all = [...before, ...after]

    expect(await journal.answers('evt_1')).toEqual([before[0], before[2], after[0]])
    expect(await journal.answers('evt_3')).toEqual(
      [before[3], after[1]].sort((a, b) => a.at - b.at || (a.id < b.id ? -1 : 1)),
    )
    expect(await journal.list({ limit: 10 })).toEqual(sortNewest(all))
    expect(await journal.list({ limit: 10, outcome: 'handler_failed' })).toEqual([after[2], before[0]])
    expect(await journal.list({ limit: 10, outcome: 'duplicate' })).toEqual(sortNewest([before[3], after[0]]))
    expect(await journal.list({ limit: 10, from: hour - 30 * MINUTE, to: hour })).toEqual(
      sortNewest([before[1], before[2], after[0]]),
    )
    const seen: JournalRecord[] = []
    let cursor: { at: number; id: string } | undefined
    for (let page = 0; page < 10; page++) {
      const found = await journal.list({ limit: 2, ...(cursor ? { after: cursor } : {}) })
      seen.push(...found)
      const last = found[found.length - 1]
      if (found.length < 2 || !last) break
      cursor = { at: last.at, id: last.id }
    }
    expect(seen).toEqual(sortNewest(all))

    const counts = await journal.counts(hour - HOUR, hour + HOUR)
    const total: Record<string, number> = {}
    for (const { outcome, count } of counts) total[outcome] = (total[outcome] ?? 0) + count
    expect(total).toEqual({ handler_failed: 2, processed: 3, duplicate: 6 })
  })
})
