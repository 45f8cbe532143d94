import {
  createWebhooks,
  type Journal,
  type JournalRecord,
  memoryStore,
  type RawDelivery,
  type WebhookStore,
} from '@payhooks/core'
import { afterEach, describe, expect, it } from 'vitest'
import { fleetNamespace, makeFleet } from './fleet.js'
import { sampleEvent } from './samples.js'
import { signedDelivery } from './signing.js'

type MaybePromise<T> = T | Promise<T>

/**
 * Makes the journal under test. Every test calls it with a fresh `namespace` (its own empty slice: a key prefix, a
 * table…); calls with the same namespace must return journals that share their records, like the instances of one
 * receiver fleet (a journal that lives in one process returns the same instance again).
 */
export type JournalFactory = (namespace: string) => MaybePromise<Journal>

const SECRET = 'whsec_journal_contract'
const MINUTE = 60_000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

let sequence = 0
/** A record of the contract; `at` defaults to now, ids grow with each call. */
function record(fields: Partial<JournalRecord> & { eventId: string }): JournalRecord {
  sequence++
  return {
    id: `contract${sequence.toString(36).padStart(8, '0')}`,
    at: Date.now(),
    eventType: 'transaction_settled',
    createdAt: '2026-11-27T10:00:00Z',
    status: 200,
    outcome: 'processed',
    instance: 'contract-1',
    durationMs: 3,
    secretIndex: 0,
    ...fields,
  }
}

async function deliver(
  webhooks: { receive(d: RawDelivery): Promise<{ status: number }> },
  event: object,
  secret = SECRET,
) {
  const { body, headers } = await signedDelivery(event, secret)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
}

/**
 * The behaviour payhooks relies on from a {@link Journal}, as a vitest suite: an event's records oldest first,
 * records shared by the instances of a namespace, listing newest first with filters and keyset pages that neither
 * skip nor repeat a record (ties on `at` included), counts per minute by outcome, nothing returned past
 * `retentionMs`, a batch written again kept once, the `copies` a record stands for counted; then through receivers
 * sharing it: two receivers and a board-only process, an event answered 500 by one, 200 by the other, then a
 * duplicate, read back in order from the third; 2,000 copies of one delivery kept as a few records; a sender
 * without the secret writes nothing.
 *
 * Each test works in a fresh namespace, calls `init` (when present) once on every instance before using it, and
 * `shutdown` (when present) after the test.
 *
 * @example
 * // test/journal.test.ts
 * import { memoryJournal, type Journal } from '@payhooks/core'
 * import { redisJournal } from '@payhooks/redis'
 * import { journalContract } from '@payhooks/testing/journal-contract'
 * import { Redis } from 'ioredis'
 *
 * const fleets = new Map<string, Journal>()
 * journalContract('memoryJournal', (namespace) => {
 *   const journal = fleets.get(namespace) ?? memoryJournal()
 *   fleets.set(namespace, journal)
 *   return journal
 * })
 * journalContract('redisJournal', (namespace) =>
 *   redisJournal(new Redis(process.env.REDIS_URL!), { keyPrefix: `test:${namespace}:` }),
 * )
 */
export function journalContract(name: string, makeJournal: JournalFactory): void {
  const made = new Set<Journal>()
  const closing: (() => Promise<void>)[] = []
  afterEach(async () => {
    for (const close of closing.splice(0)) await close()
    const journals = [...made]
    made.clear()
    for (const journal of journals) await journal.shutdown?.()
  })
  const fleet = () => makeFleet(fleetNamespace(name), makeJournal, made)

  describe(`journal contract: ${name}`, () => {
    it('keeps at least the 72 hours of the service retries', async () => {
      expect((await fleet()()).retentionMs).toBeGreaterThanOrEqual(72 * 3_600_000)
    })

    it("returns an event's records oldest first, shared by every instance; [] for an unknown event", async () => {
      const instances = fleet()
      const journal = await instances(0)
      const now = Date.now()
      const first = record({ eventId: 'evt_a', at: now - 2000, status: 500, outcome: 'handler_failed' })
      const second = record({ eventId: 'evt_a', at: now - 1000, instance: 'contract-2', secretLabel: 'sub_2' })
      await journal.write([second, record({ eventId: 'evt_b' })])
      await (await instances(1)).write([first])
      expect(await (await instances(1)).answers('evt_a')).toEqual([first, second])
      expect(await journal.answers('evt_unknown')).toEqual([])
    })

    it('lists newest first, filtered by type, outcome and time', async () => {
      const journal = await fleet()()
      const now = Date.now()
      const records = [
        record({ eventId: 'evt_1', at: now - 5000, outcome: 'handler_failed', status: 500 }),
        record({ eventId: 'evt_2', at: now - 4000, eventType: 'transaction_returned', createdAt: null }),
        record({ eventId: 'evt_3', at: now - 3000 }),
        record({ eventId: 'evt_1', at: now - 2000 }),
        record({ eventId: 'evt_3', at: now - 1000, outcome: 'duplicate' }),
      ]
      await journal.write(records)
      const ids = (found: JournalRecord[]) => found.map((r) => `${r.eventId} ${r.outcome}`)
      expect(ids(await journal.list({ limit: 10 }))).toEqual([
        'evt_3 duplicate',
        'evt_1 processed',
        'evt_3 processed',
        'evt_2 processed',
        'evt_1 handler_failed',
      ])
      expect(await journal.list({ limit: 10, outcome: 'handler_failed' })).toEqual([records[0]])
      expect(await journal.list({ limit: 10, eventType: 'transaction_returned' })).toEqual([records[1]])
      expect(ids(await journal.list({ limit: 10, from: now - 4000, to: now - 2000 }))).toEqual([
        'evt_3 processed',
        'evt_2 processed',
      ])
    })

    it('pages by keyset without skipping or repeating a record, ties on time included', async () => {
      const journal = await fleet()()
      const at = Date.now() - 10_000
      const records = Array.from({ length: 23 }, (_, i) =>
        record({
          eventId: `evt_page_${i}`,
          at: at + Math.floor(i / 4),
          outcome: i % 3 === 0 ? 'duplicate' : 'processed',
        }),
      )
      await journal.write(records)
      for (const [limit, outcome] of [
        [5, undefined],
        [2, 'duplicate'],
      ] as const) {
        const seen: JournalRecord[] = []
        let after: { at: number; id: string } | undefined
        for (let page = 0; page < 30; page++) {
          const found = await journal.list({ limit, ...(outcome ? { outcome } : {}), ...(after ? { after } : {}) })
          seen.push(...found)
          const last = found[found.length - 1]
          if (found.length < limit || !last) break
          after = { at: last.at, id: last.id }
        }
        const expected = records
          .filter((r) => outcome === undefined || r.outcome === outcome)
          .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : -1))
        expect(seen.map((r) => r.id)).toEqual(expected.map((r) => r.id))
      }
    })

    it('counts answers per minute by outcome, every instance together', async () => {
      const instances = fleet()
      const minute = Math.floor(Date.now() / MINUTE) * MINUTE - 3 * MINUTE
      await (await instances(0)).write([
        record({ eventId: 'evt_c1', at: minute + 1 }),
        record({ eventId: 'evt_c2', at: minute + 59_999, outcome: 'handler_failed', status: 500 }),
        record({ eventId: 'evt_c3', at: minute + MINUTE }),
      ])
      await (await instances(1)).write([
        record({ eventId: 'evt_c4', at: minute + 2, instance: 'contract-2' }),
        record({ eventId: 'evt_c5', at: minute - 1 }),
      ])
      const counts = await (await instances(0)).counts(minute, minute + 2 * MINUTE)
      const sorted = [...counts]
        .filter((c) => c.count > 0)
        .sort((a, b) => a.minute - b.minute || (a.outcome < b.outcome ? -1 : 1))
      expect(sorted).toEqual([
        { minute, outcome: 'handler_failed', count: 1 },
        { minute, outcome: 'processed', count: 2 },
        { minute: minute + MINUTE, outcome: 'processed', count: 1 },
      ])
    })

    it('takes a batch holding several answers of one event across two hours, one past retention', async () => {
      const journal = await fleet()()
      const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000
      const old = record({ eventId: 'evt_many', at: Date.now() - journal.retentionMs - MINUTE })
      const answers = [
        record({ eventId: 'evt_many', at: hour - 2000, outcome: 'handler_failed', status: 500 }),
        record({ eventId: 'evt_many', at: hour - 1000, outcome: 'duplicate' }),
        record({ eventId: 'evt_many', at: hour + 1000, outcome: 'handler_failed', status: 500 }),
        record({ eventId: 'evt_many', at: hour + 2000 }),
      ]
      const other = record({ eventId: 'evt_other', at: hour + 3000 })
      await journal.write([answers[2], old, answers[0], other, answers[3], answers[1]] as JournalRecord[])
      expect(await journal.answers('evt_many')).toEqual(answers)
      expect(await journal.list({ limit: 10, outcome: 'handler_failed' })).toEqual([answers[2], answers[0]])
      expect((await journal.list({ limit: 10 })).map((r) => r.id)).toEqual(
        [other, ...answers].sort((a, b) => b.at - a.at).map((r) => r.id),
      )
      const counts = (await journal.counts(hour - MINUTE, hour + MINUTE)).filter((c) => c.count > 0)
      expect(counts.sort((a, b) => a.minute - b.minute || (a.outcome < b.outcome ? -1 : 1))).toEqual([
        { minute: hour - MINUTE, outcome: 'duplicate', count: 1 },
        { minute: hour - MINUTE, outcome: 'handler_failed', count: 1 },
        { minute: hour, outcome: 'handler_failed', count: 1 },
        { minute: hour, outcome: 'processed', count: 2 },
      ])
    })

    it('keeps a batch written again once (a retry after a lost reply), and counts the copies a record stands for', async () => {
      const journal = await fleet()()
      const now = Date.now()
      const batch = [
        record({ eventId: 'evt_again', at: now - 2000, outcome: 'handler_failed', status: 500 }),
        record({ eventId: 'evt_again', at: now - 1000 }),
        record({ eventId: 'evt_again', at: now - 500, outcome: 'duplicate', copies: 41 }),
        record({ eventId: '', eventType: '', at: now - 400, outcome: 'journal_gap', status: 0, copies: 7 }),
      ]
      await journal.write(batch)
      await journal.write(batch)
      await journal.write([batch[1] as JournalRecord])
      expect(await journal.answers('evt_again')).toEqual(batch.slice(0, 3))
      expect((await journal.list({ limit: 10 })).map((r) => r.id)).toEqual([...batch].reverse().map((r) => r.id))
      expect(await journal.list({ limit: 10, outcome: 'journal_gap' })).toEqual([batch[3]])
      const minute = (at: number) => at - (at % MINUTE)
      const counts = await journal.counts(minute(now - 2000), minute(now) + MINUTE)
      const total: Record<string, number> = {}
      for (const { outcome, count } of counts) total[outcome] = (total[outcome] ?? 0) + count
      expect(total).toEqual({ handler_failed: 1, processed: 1, duplicate: 41, journal_gap: 7 })
    })

    it("lists by event type through a receiver's events, hours apart, a page at a time, none skipped or repeated", async () => {
      const journal = await fleet()()
      const webhooks = createWebhooks({ secret: SECRET, journal, logger: { error() {} }, checkAtStart: false })
      closing.push(() => webhooks.close())
      const now = Date.now()
      // Answers of a rare type 1, 5 and 30 hours ago (two at the same millisecond), among common ones.
      const rare = [1, 5, 5, 30].map((hours) =>
        record({ eventId: `evt_rare_${hours}`, at: now - hours * 3_600_000, eventType: 'transaction_returned' }),
      )
      const common = Array.from({ length: 40 }, (_, i) => record({ eventId: `evt_c_${i}`, at: now - i * 3_000_000 }))
      await journal.write([...common, ...rare])
      const seen: string[] = []
      let cursor: string | undefined
      for (let page = 0; page < 100; page++) {
        const found = await webhooks.events.list({ eventType: 'transaction_returned', limit: 1, cursor })
        seen.push(...found.answers.map((answer) => answer.eventId))
        cursor = found.cursor
        if (!cursor) break
      }
      expect(seen.sort()).toEqual(rare.map((r) => r.eventId).sort())
      expect(seen).toHaveLength(4)
      const nothing = await webhooks.events.list({ eventType: 'no_such_type' })
      expect(nothing.answers).toEqual([])
    })

    it('returns nothing past its retention', async () => {
      const journal = await fleet()()
      const old = Date.now() - journal.retentionMs - MINUTE
      await journal.write([record({ eventId: 'evt_old', at: old }), record({ eventId: 'evt_kept' })])
      expect(await journal.answers('evt_old')).toEqual([])
      expect((await journal.list({ limit: 10 })).map((r) => r.eventId)).toEqual(['evt_kept'])
      const counts = await journal.counts(old - (old % MINUTE), old - (old % MINUTE) + MINUTE)
      expect(counts.filter((c) => c.count > 0)).toEqual([])
    })

    describe('through receivers sharing it', () => {
      /** Two receivers and a board-only process of one fleet, sharing the journal and a store. */
      async function receivers() {
        const instances = fleet()
        const store: WebhookStore = memoryStore()
        let failNext = true
        const make = async (index: number, instance: string) => {
          const webhooks = createWebhooks({
            secret: SECRET,
            store,
            journal: await instances(index),
            instance,
            logger: { error() {}, warn() {} },
            checkAtStart: false,
          })
          closing.push(() => webhooks.close())
          return webhooks
        }
        const one = await make(0, 'receiver-1')
        const two = await make(1, 'receiver-2')
        const board = await make(2, 'board')
        one.on('transaction_settled', () => {
          if (failNext) {
            failNext = false
            throw new Error('ledger down')
          }
        })
        two.on('transaction_settled', () => {})
        return { one, two, board }
      }

      it('an event answered 500 by one, 200 by the other, then a duplicate: the third reads all three, in order', async () => {
        const { one, two, board } = await receivers()
        const event = sampleEvent('transaction_settled')
        expect((await deliver(one, event)).status).toBe(500)
        await sleep(2)
        expect((await deliver(two, event)).status).toBe(200)
        await sleep(2)
        expect((await deliver(one, event)).status).toBe(200)
        await one.events.flush()
        await two.events.flush()
        const timeline = await board.events.get(event.event_id as string)
        expect(timeline).toMatchObject({
          eventId: event.event_id,
          eventType: 'transaction_settled',
          createdAt: event.created_at,
        })
        expect(timeline?.answers.map((a) => [a.status, a.outcome, a.instance, a.verifiedWith.index])).toEqual([
          [500, 'handler_failed', 'receiver-1', 0],
          [200, 'processed', 'receiver-2', 0],
          [200, 'duplicate', 'receiver-1', 0],
        ])
        expect(timeline?.handledAt).toEqual(timeline?.answers[1]?.at)
        for (const answer of timeline?.answers ?? []) expect(answer.durationMs).toBeGreaterThanOrEqual(0)
        const { answers } = await board.events.list({ outcome: 'handler_failed' })
        expect(answers.map((a) => [a.eventId, a.instance])).toEqual([[event.event_id, 'receiver-1']])
        const { total } = await board.events.counts({ minutes: 5 })
        expect(total).toEqual({ handler_failed: 1, processed: 1, duplicate: 1 })
      })

      it('2,000 copies of one captured delivery leave a few records; a real event keeps its answers', async () => {
        const { one, two, board } = await receivers()
        const real = sampleEvent('transaction_settled')
        expect((await deliver(one, real)).status).toBe(500)
        await sleep(2)
        expect((await deliver(two, real)).status).toBe(200)
        const captured = sampleEvent('transaction_settled')
        const { body, headers } = await signedDelivery(captured, SECRET)
        const replay = { method: 'POST', body, getHeader: (name: string) => headers[name as keyof typeof headers] }
        expect((await two.receive(replay)).status).toBe(200)
        for (let i = 0; i < 2000; i++) await (i % 2 ? one : two).receive(replay)
        await one.events.flush()
        await two.events.flush()
        const copies = await board.events.get(captured.event_id as string)
        const answers = copies?.answers ?? []
        // Per instance and minute: the first 3 copies, then one count (a minute may turn during the run).
        expect(answers.length).toBeLessThanOrEqual(1 + 2 * 2 * 4)
        expect(answers.reduce((sum, a) => sum + a.copies, 0)).toBe(2001)
        expect(answers.filter((a) => a.outcome === 'processed')).toHaveLength(1)
        expect((await board.events.list({ limit: 1000 })).answers.length).toBeLessThanOrEqual(2 + answers.length)
        const timeline = await board.events.get(real.event_id as string)
        expect(timeline?.answers.map((a) => a.outcome)).toEqual(['handler_failed', 'processed'])
        expect((await board.events.counts({ minutes: 5 })).total.duplicate).toBe(2000)
      })

      it('a sender without the secret leaves no entry; the body and the secret are never stored', async () => {
        const { one, board } = await receivers()
        const forged = sampleEvent('transaction_settled')
        expect((await deliver(one, forged, 'whsec_not_ours')).status).toBe(401)
        const unsigned = JSON.stringify(sampleEvent('transaction_settled'))
        expect((await one.receive({ method: 'POST', body: unsigned, getHeader: () => undefined })).status).toBe(401)
        const signed = sampleEvent('transaction_settled')
        await deliver(one, signed)
        await one.events.flush()
        expect(await board.events.get(forged.event_id as string)).toBeUndefined()
        const { answers } = await board.events.list({ limit: 10 })
        expect(answers.map((a) => a.eventId)).toEqual([signed.event_id])
        const stored = JSON.stringify(await board.events.list())
        expect(stored).not.toContain(SECRET)
        expect(stored).not.toContain((signed.data as { transaction_id: string }).transaction_id)
      })
    })
  })
}
