// redisJournal's layout (issue 49): answers in Redis Streams, an index from the event id's hash kept in small hashes
// that stay listpack-encoded as an hour fills, records appended after newer ones found at their place, records a
// compact text cannot hold kept exactly, a batch written again after the index grew kept once, and the answers kept
// per event bounded; on a real Redis with its default settings.
import type { JournalRecord } from '@payhooks/core'
import { redisJournal } from '@payhooks/redis'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const redis = new Redis(process.env.REDIS_URL as string)
const prefixes: string[] = []
afterAll(async () => {
  for (const prefix of prefixes) {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
  }
  redis.disconnect()
})

const MINUTE = 60_000
let sequence = 0
function record(fields: Partial<JournalRecord> & { eventId: string }): JournalRecord {
  sequence++
  return {
    id: `0a1b2c3d4e5f${sequence.toString(36).padStart(8, '0')}`,
    at: Date.now(),
    eventType: 'transaction_settled',
    createdAt: '2026-11-27T10:00:00Z',
    status: 200,
    outcome: 'processed',
    instance: 'ip-10-0-3-17:4121',
    durationMs: 3,
    secretIndex: 0,
    ...fields,
  }
}

function journalOn(options: { shards?: number; maxAnswersPerEvent?: number } = {}) {
  const keyPrefix = `journal-layout:${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}:`
  prefixes.push(keyPrefix)
  return { ...UNHURRIED, keyPrefix, journal: redisJournal(redis, { keyPrefix, ...options }) }
}

async function writeAll(journal: { write(r: readonly JournalRecord[]): Promise<void> }, records: JournalRecord[]) {
  for (let i = 0; i < records.length; i += 256) await journal.write(records.slice(i, i + 256))
}

const newestFirst = (records: JournalRecord[]) => [...records].sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))

describe('redisJournal layout', () => {
  it('keeps its index in listpack-encoded hashes as an hour fills, each event read back', async () => {
    const { keyPrefix, journal } = journalOn({ shards: 1 })
    const start = Date.now() - 3000
    const records = Array.from({ length: 3000 }, (_, i) =>
      record({ eventId: `evt_${i.toString(16).padStart(8, '0')}-7c1e-4c2a-9a8e-000000000000`, at: start + i }),
    )
    await writeAll(journal, records)
    const index = await redis.keys(`${keyPrefix}*}i:*`)
    // 3,000 events: the hour's index grew from one bucket, by 4 each time, past a single hash's 128 entries.
    expect(index.length).toBeGreaterThan(16)
    for (const key of index) expect(await redis.object('ENCODING', key)).toBe('listpack')
    const streams = await redis.keys(`${keyPrefix}*}r`)
    expect(streams).toHaveLength(1)
    expect(await redis.type(streams[0] as string)).toBe('stream')
    for (let i = 0; i < records.length; i += 97) {
      const { eventId } = records[i] as JournalRecord
      expect(await journal.answers(eventId)).toEqual([records[i]])
    }
    expect(await journal.list({ limit: 5 })).toEqual(newestFirst(records).slice(0, 5))
  })

  it('finds a record written after newer ones at its place in lists, windows and pages', async () => {
    const { journal } = journalOn()
    const now = Date.now()
    const recent = Array.from({ length: 40 }, (_, i) => record({ eventId: `evt_recent_${i}`, at: now - 1000 + i }))
    await journal.write(recent)
    // An instance whose batch waited 20 minutes (its journal unreachable), and one whose clock is behind.
    const late = [
      record({ eventId: 'evt_late_1', at: now - 20 * MINUTE }),
      record({ eventId: 'evt_late_2', at: now - 500, outcome: 'handler_failed', status: 500 }),
    ]
    await journal.write(late)
    const all = newestFirst([...recent, ...late])
    expect(await journal.list({ limit: 100 })).toEqual(all)
    expect(await journal.list({ limit: 10, to: now - 10 * MINUTE })).toEqual([late[0]])
    expect(await journal.list({ limit: 10, from: now - 25 * MINUTE, to: now - 15 * MINUTE })).toEqual([late[0]])
    expect(await journal.list({ limit: 10, outcome: 'handler_failed' })).toEqual([late[1]])
    const seen: JournalRecord[] = []
    let after: { at: number; id: string } | undefined
    for (let page = 0; page < 50; page++) {
      const found = await journal.list({ limit: 3, ...(after ? { after } : {}) })
      seen.push(...found)
      const last = found[found.length - 1]
      if (found.length < 3 || !last) break
      after = { at: last.at, id: last.id }
    }
    expect(seen).toEqual(all)
  })

  it('keeps exactly the records a compact text cannot hold, and every field of those it can', async () => {
    const { journal } = journalOn()
    const now = Date.now()
    const records = [
      record({ eventId: 'evt_\x1fsep', at: now - 9, instance: 'a\x1eb', secretLabel: 'x\ny' }),
      record({
        eventId: '',
        eventType: '',
        at: now - 8,
        outcome: 'journal_gap',
        status: 0,
        copies: 7,
        createdAt: null,
      }),
      record({ eventId: 'evt_ms', at: now - 7, createdAt: '2026-11-27T10:00:00.123Z', outcome: 'replay_processed' }),
      record({ eventId: 'evt_odd', at: now - 6, createdAt: '27/11/2026 10:00', secretIndex: 3, secretLabel: '' }),
      record({ eventId: 'evt_future', at: now - 5, createdAt: '2026-12-31T23:59:59Z', status: 503, copies: 41 }),
      record({ eventId: 'evt_empty', at: now - 4, createdAt: '', outcome: 'busy', durationMs: 0, id: 'short' }),
      record({ eventId: 'evt_label', at: now - 3, secretLabel: '=sub_2', outcome: 'in_progress', status: 409 }),
    ]
    await journal.write(records)
    for (const r of records) expect(await journal.answers(r.eventId)).toEqual([r])
    expect(await journal.list({ limit: 10 })).toEqual(newestFirst(records))
  })

  it('keeps a batch written again once, though the index grew in between', async () => {
    const { journal } = journalOn({ shards: 1 })
    const now = Date.now()
    const batch = Array.from({ length: 10 }, (_, i) => record({ eventId: `evt_again_${i}`, at: now - 2000 + i }))
    await journal.write(batch)
    const more = Array.from({ length: 300 }, (_, i) => record({ eventId: `evt_more_${i}`, at: now - 1000 + i }))
    await writeAll(journal, more)
    await journal.write(batch)
    for (const r of batch) expect(await journal.answers(r.eventId)).toEqual([r])
    expect(await journal.list({ limit: 1000 })).toHaveLength(310)
    const counts = await journal.counts(now - 2 * MINUTE, now + MINUTE)
    expect(counts.reduce((sum, c) => sum + c.count, 0)).toBe(310)
  })

  it('keeps the last maxAnswersPerEvent answers of an event', async () => {
    const { journal } = journalOn({ maxAnswersPerEvent: 3 })
    const now = Date.now()
    const answers = Array.from({ length: 5 }, (_, i) =>
      record({ eventId: 'evt_many', at: now - 5000 + i * 1000, outcome: i ? 'duplicate' : 'processed' }),
    )
    await journal.write(answers.slice(0, 2))
    await journal.write(answers.slice(2))
    expect(await journal.answers('evt_many')).toEqual(answers.slice(2))
  })
})
