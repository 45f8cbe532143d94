import { randomUUID } from 'node:crypto'
import {
  createWebhooks,
  type DeadLetter,
  type DeadLetterStore,
  type DeadLetters,
  HandlerError,
  memoryStore,
  type ParkedEvent,
  SchemaError,
  SIGNATURE_HEADER,
  transactionSettledSchema,
  type WebhookError,
  type Webhooks,
} from '@payhooks/core'
import * as v from 'valibot'
import { afterEach, describe, expect, it } from 'vitest'
import { sampleEvent } from './samples.js'
import { signedDelivery } from './signing.js'

type MaybePromise<T> = T | Promise<T>

/**
 * Makes the dead-letter store under test. Every test calls it with a fresh `namespace` (its own empty slice: a
 * key prefix, a table, …); calls with the same namespace must return stores that share their letters, like the
 * instances of one receiver fleet (a store that lives in one process returns the same instance again).
 */
export type DeadLetterStoreFactory = (namespace: string) => MaybePromise<DeadLetterStore>

/** A signed event of the contract, as a test hands it to {@link DeadLetterSubject.park}. */
export interface ContractEvent {
  event_id: string
  event_type: string
  [field: string]: unknown
}

/**
 * Dead letters under test through the {@link DeadLetters} interface tools use (list, get, replay), with a way to
 * make some: for a queue whose dead letters are its failed jobs, where a store's `park` does not fit.
 */
export interface DeadLetterSubject {
  deadLetters: DeadLetters
  /**
   * Makes `event` a dead letter whose reason contains `reason`, as a handler failure, and resolves once
   * `deadLetters.get` finds it. From then on the event's handlers succeed.
   */
  park(event: ContractEvent, reason: string): Promise<void>
  /** How many times the handlers of `eventId` ran and succeeded. */
  runs(eventId: string): number
  /** Resolves once the work replays handed on (a queue's jobs) has finished. @default nothing to wait for */
  settle?(): Promise<void>
  /** Closes what the subject opened, after each test. */
  close?(): Promise<void>
}

/** Makes a {@link DeadLetterSubject} in a fresh `namespace` for each test. */
export type DeadLetterSubjectFactory = (namespace: string) => MaybePromise<DeadLetterSubject>

const SECRET = 'whsec_dead_letter_contract'
const HOUR = 60 * 60 * 1000
const silent = { error() {} }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Waits until the clock moved past `time`, so letters parked one after the other have distinct times. */
async function after(time: number): Promise<void> {
  while (Date.now() <= time + 1) await sleep(2)
}

/**
 * What tools rely on from a {@link DeadLetters} (list, get, replay, replayAll), as a vitest suite: newest first,
 * filters and pages, replay runs an event's handlers once and a second replay runs nothing. Run by
 * {@link deadLetterContract} for every store, and on its own for dead letters that are not a store (BullMQ's
 * failed jobs, through `bullmqDeadLetters`).
 *
 * @example
 * deadLetterViewContract('bullmqDeadLetters', async (namespace) => makeQueueSubject(namespace))
 */
export function deadLetterViewContract(name: string, makeSubject: DeadLetterSubjectFactory): void {
  const made: DeadLetterSubject[] = []
  afterEach(async () => {
    for (const subject of made.splice(0)) await subject.close?.()
  })
  async function subject(): Promise<DeadLetterSubject> {
    const made_ = await makeSubject(`${name.replace(/[^\w-]/g, '_')}-${randomUUID()}`)
    made.push(made_)
    return made_
  }
  /** Parks `events` one after the other, each at a later millisecond than the one before. */
  async function parkAll(s: DeadLetterSubject, events: ContractEvent[], reason = 'boom'): Promise<void> {
    for (const event of events) {
      const started = Date.now()
      await s.park(event, `${reason} ${event.event_id}`)
      await after(started)
    }
  }
  const ids = (letters: DeadLetter[]) => letters.map((letter) => letter.eventId)
  const settled = (id: string) => sampleEvent('transaction_settled', { eventId: id }) as ContractEvent
  const returned = (id: string) => sampleEvent('transaction_returned', { eventId: id }) as ContractEvent

  describe(`dead letters contract: ${name}`, () => {
    it('lists a parked event with its id, type, code, reason and time; get finds it, and nothing for an unknown id', async () => {
      const s = await subject()
      const before = Date.now()
      await parkAll(s, [settled('evt_dl_listed')], 'ledger down')
      const listed = await s.deadLetters.list()
      expect(ids(listed)).toEqual(['evt_dl_listed'])
      const letter = await s.deadLetters.get('evt_dl_listed')
      for (const found of [listed[0], letter]) {
        expect(found).toMatchObject({
          eventId: 'evt_dl_listed',
          eventType: 'transaction_settled',
          code: 'handler_failed',
          status: 'parked',
        })
        expect(found?.reason).toContain('ledger down evt_dl_listed')
        expect(found?.parkedAt).toBeInstanceOf(Date)
        expect(found?.parkedAt.getTime()).toBeGreaterThanOrEqual(before - 1000)
        expect(found?.parkedAt.getTime()).toBeLessThanOrEqual(Date.now() + 1000)
      }
      expect(await s.deadLetters.get('evt_dl_unknown')).toBeUndefined()
      expect(s.runs('evt_dl_listed')).toBe(0)
    })

    it('lists newest first, filters by event type, code and time, and pages with limit and offset', async () => {
      const s = await subject()
      await parkAll(s, [settled('evt_dl_a'), returned('evt_dl_b'), settled('evt_dl_c')])
      const all = await s.deadLetters.list()
      expect(ids(all)).toEqual(['evt_dl_c', 'evt_dl_b', 'evt_dl_a'])
      expect(ids(await s.deadLetters.list({ eventType: 'transaction_settled' }))).toEqual(['evt_dl_c', 'evt_dl_a'])
      expect(ids(await s.deadLetters.list({ code: 'handler_failed' }))).toEqual(['evt_dl_c', 'evt_dl_b', 'evt_dl_a'])
      expect(await s.deadLetters.list({ code: 'schema_mismatch' })).toEqual([])
      expect(ids(await s.deadLetters.list({ limit: 1, offset: 1 }))).toEqual(['evt_dl_b'])
      expect(ids(await s.deadLetters.list({ limit: 2 }))).toEqual(['evt_dl_c', 'evt_dl_b'])
      expect(await s.deadLetters.list({ offset: 3 })).toEqual([])
      const b = all[1] as DeadLetter
      expect(ids(await s.deadLetters.list({ parkedAfter: b.parkedAt }))).toEqual(['evt_dl_c', 'evt_dl_b'])
      expect(ids(await s.deadLetters.list({ parkedBefore: b.parkedAt }))).toEqual(['evt_dl_a'])
      expect(
        ids(await s.deadLetters.list({ eventType: 'transaction_settled', parkedAfter: b.parkedAt, limit: 5 })),
      ).toEqual(['evt_dl_c'])
    })

    it('replays a letter: its handlers run once and it leaves the parked list; a second replay runs nothing', async () => {
      const s = await subject()
      await parkAll(s, [settled('evt_dl_replayed'), settled('evt_dl_kept')])
      const first = await s.deadLetters.replay('evt_dl_replayed')
      expect(first.eventId).toBe('evt_dl_replayed')
      expect(['processed', 'queued']).toContain(first.status)
      await s.settle?.()
      expect(s.runs('evt_dl_replayed')).toBe(1)
      expect(ids(await s.deadLetters.list())).toEqual(['evt_dl_kept'])

      const second = await s.deadLetters.replay('evt_dl_replayed')
      expect(['duplicate', 'not_found']).toContain(second.status)
      await s.settle?.()
      expect(s.runs('evt_dl_replayed')).toBe(1)
      expect(s.runs('evt_dl_kept')).toBe(0)
    })

    it('replays every parked letter matching a filter, oldest first, and only those', async () => {
      const s = await subject()
      await parkAll(s, [settled('evt_dl_old'), returned('evt_dl_other'), settled('evt_dl_new')])
      const outcomes = await s.deadLetters.replayAll({ eventType: 'transaction_settled' })
      expect(outcomes.map((outcome) => outcome.eventId)).toEqual(['evt_dl_old', 'evt_dl_new'])
      for (const outcome of outcomes) expect(['processed', 'queued']).toContain(outcome.status)
      await s.settle?.()
      expect([s.runs('evt_dl_old'), s.runs('evt_dl_new'), s.runs('evt_dl_other')]).toEqual([1, 1, 0])
      expect(ids(await s.deadLetters.list())).toEqual(['evt_dl_other'])
      expect(await s.deadLetters.replayAll({ code: 'schema_mismatch' })).toEqual([])
    })

    it('answers not_found to the replay of an unknown id, running nothing', async () => {
      const s = await subject()
      expect(await s.deadLetters.replay('evt_dl_nothing')).toEqual({ eventId: 'evt_dl_nothing', status: 'not_found' })
      await s.settle?.()
      expect(s.runs('evt_dl_nothing')).toBe(0)
    })
  })
}

/** `transaction_settled` with `settlement_amount` as a decimal string, which the built-in schema refuses. */
const amountAsString = (id: string, createdAt?: string) =>
  sampleEvent('transaction_settled', { eventId: id, createdAt, data: { settlement_amount: '10.30' } }) as ContractEvent

/** The schema fixed for {@link amountAsString}: the amount as a number or a decimal string. */
const fixedSchemas = {
  transaction_settled: v.looseObject({
    ...transactionSettledSchema.entries,
    data: v.looseObject({
      ...transactionSettledSchema.entries.data.entries,
      settlement_amount: v.union([v.number(), v.pipe(v.string(), v.decimal(), v.transform(Number))]),
    }),
  }),
}

async function deliver(webhooks: Pick<Webhooks<unknown>, 'receive'>, body: string, headers: Record<string, string>) {
  const result = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name] })
  return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
}

/**
 * The behaviour payhooks relies on from a {@link DeadLetterStore}, as a vitest suite: the exact bytes kept,
 * parking again in place, `markReplayed`, newest-first listing with filters and pages, letters shared by the
 * instances of a namespace; then through a receiver: a schema mismatch parked (answered 200 only when the store
 * is `durable`), replayed once the schema is fixed (once: a second replay is a duplicate), a stored body altered
 * after parking refused, and a handler failure on an event signed over 71 hours ago parked. It also runs
 * {@link deadLetterViewContract} on the receiver's `webhooks.deadLetters` over the store.
 *
 * Each test works in a fresh namespace, calls `init` (when present) once on every instance before using it, and
 * `shutdown` (when present) after the test.
 *
 * @example
 * // test/dead-letters.test.ts
 * import { memoryDeadLetterStore, type DeadLetterStore } from '@payhooks/core'
 * import { redisDeadLetterStore } from '@payhooks/redis'
 * import { deadLetterContract } from '@payhooks/testing/dead-letter-contract'
 * import { Redis } from 'ioredis'
 *
 * const fleets = new Map<string, DeadLetterStore>()
 * deadLetterContract('memoryDeadLetterStore', (namespace) => {
 *   const store = fleets.get(namespace) ?? memoryDeadLetterStore()
 *   fleets.set(namespace, store)
 *   return store
 * })
 * deadLetterContract('redisDeadLetterStore', (namespace) =>
 *   redisDeadLetterStore(new Redis(process.env.REDIS_URL!), { keyPrefix: `{test:${namespace}}:` }),
 * )
 */
export function deadLetterContract(name: string, makeStore: DeadLetterStoreFactory): void {
  const made = new Set<DeadLetterStore>()
  afterEach(async () => {
    const stores = [...made]
    made.clear()
    for (const store of stores) await store.shutdown?.()
  })

  /** Instances of one fleet, in a namespace of this test's own; instance(i) is made on first use. */
  function fleet(namespace = `${name.replace(/[^\w-]/g, '_')}-${randomUUID()}`) {
    const instances = new Map<number, Promise<DeadLetterStore>>()
    return (index = 0): Promise<DeadLetterStore> => {
      let instance = instances.get(index)
      if (!instance) {
        instance = (async () => {
          const store = await makeStore(namespace)
          made.add(store)
          await store.init?.()
          return store
        })()
        instances.set(index, instance)
      }
      return instance
    }
  }

  /** A receiver over `store`, whose handlers count their successful runs and fail while `failing` says so. */
  function receiver(store: DeadLetterStore, options: { fixed?: boolean; failing?: () => boolean } = {}) {
    const runs = new Map<string, number>()
    const errors: WebhookError[] = []
    const webhooks = createWebhooks({
      secret: SECRET,
      store: memoryStore(),
      deadLetters: store,
      logger: silent,
      ...(options.fixed ? { schemas: fixedSchemas } : {}),
    })
    webhooks.onError((error) => errors.push(error))
    webhooks.onAny((event) => {
      if (options.failing?.()) throw new Error(`ledger down for ${event.event_id}`)
      runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
    })
    // Not closed: that would shut the store down, which the contract does once per instance after the test.
    return { webhooks, errors, runs: (id: string) => runs.get(id) ?? 0 }
  }

  function parked(id: string, overrides: Partial<ParkedEvent> = {}): ParkedEvent {
    return {
      eventId: id,
      eventType: 'transaction_settled',
      body: new TextEncoder().encode(`{"event_id":"${id}"}`),
      headers: { [SIGNATURE_HEADER]: 'A'.repeat(64), 'content-type': 'application/json' },
      code: 'schema_mismatch',
      reason: `transaction_settled ${id} does not match its schema`,
      createdAt: new Date('2026-11-03T08:00:00.000Z'),
      parkedAt: new Date('2026-11-04T08:00:00.000Z'),
      ...overrides,
    }
  }

  describe(`dead letter store contract: ${name}`, () => {
    it('keeps the exact bytes, the headers, code, reason and times of a parked event', async () => {
      const store = await fleet()()
      // UTF-8 text, then bytes that are no UTF-8 at all: nothing may be decoded and re-encoded.
      const body = new Uint8Array([...new TextEncoder().encode('{"name":"Zoë 💶"}'), 0xff, 0x00, 0x80, 0xc3])
      const event = parked('evt_bytes', { body })
      await store.park(event)
      const letter = await store.get('evt_bytes')
      expect(letter).toBeDefined()
      expect(Array.from(letter?.body ?? [])).toEqual(Array.from(body))
      expect(letter).toMatchObject({
        eventId: 'evt_bytes',
        eventType: 'transaction_settled',
        headers: event.headers,
        code: 'schema_mismatch',
        reason: event.reason,
        parkCount: 1,
        status: 'parked',
      })
      expect(letter?.createdAt?.toISOString()).toBe('2026-11-03T08:00:00.000Z')
      expect(letter?.parkedAt.toISOString()).toBe('2026-11-04T08:00:00.000Z')
      expect(letter?.firstParkedAt.toISOString()).toBe('2026-11-04T08:00:00.000Z')
      expect(letter?.replayedAt).toBeUndefined()

      await store.park(parked('evt_no_created_at', { createdAt: undefined, code: 'handler_failed', headers: {} }))
      const bare = await store.get('evt_no_created_at')
      expect(bare?.createdAt).toBeUndefined()
      expect(bare?.headers).toEqual({})
      expect(bare?.code).toBe('handler_failed')
      expect(await store.get('evt_never_parked')).toBeUndefined()
      expect(typeof store.durable).toBe('boolean')
    })

    it('parks an event again in place: one letter, the latest bytes and reason, the first time kept, the count up', async () => {
      const store = await fleet()()
      await store.park(parked('evt_again'))
      await store.park(
        parked('evt_again', {
          body: new TextEncoder().encode('{"second":true}'),
          code: 'handler_failed',
          reason: 'second reason',
          parkedAt: new Date('2026-11-05T09:00:00.000Z'),
        }),
      )
      const letter = await store.get('evt_again')
      expect(new TextDecoder().decode(letter?.body)).toBe('{"second":true}')
      expect(letter).toMatchObject({ code: 'handler_failed', reason: 'second reason', parkCount: 2, status: 'parked' })
      expect(letter?.firstParkedAt.toISOString()).toBe('2026-11-04T08:00:00.000Z')
      expect(letter?.parkedAt.toISOString()).toBe('2026-11-05T09:00:00.000Z')
      expect((await store.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_again'])
    })

    it('marks a letter replayed: out of the parked list, in the replayed one; parking it again makes it parked', async () => {
      const store = await fleet()()
      await store.park(parked('evt_marked'))
      await store.park(parked('evt_waiting', { parkedAt: new Date('2026-11-04T07:00:00.000Z') }))
      const at = new Date('2026-11-06T10:00:00.000Z')
      expect(await store.markReplayed('evt_marked', at)).toBe(true)
      expect(await store.markReplayed('evt_never_parked', at)).toBe(false)
      const letter = await store.get('evt_marked')
      expect(letter?.status).toBe('replayed')
      expect(letter?.replayedAt?.toISOString()).toBe('2026-11-06T10:00:00.000Z')
      expect((await store.list()).map((l) => l.eventId)).toEqual(['evt_waiting'])
      expect((await store.list({ status: 'replayed' })).map((l) => l.eventId)).toEqual(['evt_marked'])
      expect((await store.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_marked', 'evt_waiting'])

      await store.park(parked('evt_marked', { parkedAt: new Date('2026-11-07T10:00:00.000Z') }))
      const again = await store.get('evt_marked')
      expect(again).toMatchObject({ status: 'parked', parkCount: 2 })
      expect(again?.replayedAt).toBeUndefined()
      expect((await store.list()).map((l) => l.eventId)).toEqual(['evt_marked', 'evt_waiting'])
    })

    it('lists newest first, with filters on type, code, status and time, in pages; a bad query throws', async () => {
      const store = await fleet()()
      const base = Date.parse('2026-11-04T00:00:00.000Z')
      const types = ['transaction_settled', 'transaction_returned', 'sale_created_from_batch']
      for (let i = 0; i < 12; i++) {
        await store.park(
          parked(`evt_list_${String(i).padStart(2, '0')}`, {
            eventType: types[i % 3] as string,
            code: i % 2 === 0 ? 'schema_mismatch' : 'handler_failed',
            parkedAt: new Date(base + i * 60_000),
          }),
        )
      }
      const listIds = async (query: Parameters<DeadLetterStore['list']>[0]) =>
        (await store.list(query)).map((l) => l.eventId.slice('evt_list_'.length))
      expect(await listIds(undefined)).toEqual(['11', '10', '09', '08', '07', '06', '05', '04', '03', '02', '01', '00'])
      expect(await listIds({ eventType: 'transaction_returned' })).toEqual(['10', '07', '04', '01'])
      expect(await listIds({ code: 'handler_failed' })).toEqual(['11', '09', '07', '05', '03', '01'])
      expect(await listIds({ eventType: 'transaction_settled', code: 'schema_mismatch' })).toEqual(['06', '00'])
      expect(await listIds({ parkedAfter: new Date(base + 9 * 60_000) })).toEqual(['11', '10', '09'])
      expect(await listIds({ parkedBefore: new Date(base + 2 * 60_000) })).toEqual(['01', '00'])
      expect(
        await listIds({ parkedAfter: new Date(base + 3 * 60_000), parkedBefore: new Date(base + 8 * 60_000) }),
      ).toEqual(['07', '06', '05', '04', '03'])
      expect(await listIds({ limit: 3 })).toEqual(['11', '10', '09'])
      expect(await listIds({ limit: 3, offset: 3 })).toEqual(['08', '07', '06'])
      expect(await listIds({ code: 'handler_failed', limit: 2, offset: 2 })).toEqual(['07', '05'])
      expect(await listIds({ offset: 12 })).toEqual([])
      expect(await listIds({ status: 'replayed' })).toEqual([])
      expect(await listIds({ eventType: 'payment_created' })).toEqual([])

      await expect((async () => store.list({ limit: 0 }))()).rejects.toThrow(RangeError)
      await expect((async () => store.list({ offset: -1 }))()).rejects.toThrow(RangeError)
      await expect((async () => store.list({ status: 'gone' as 'all' }))()).rejects.toThrow(TypeError)
    })

    it('shares its letters between the instances of one namespace', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      await first.park(parked('evt_shared'))
      expect((await second.get('evt_shared'))?.eventId).toBe('evt_shared')
      expect(await second.markReplayed('evt_shared', new Date())).toBe(true)
      expect((await first.get('evt_shared'))?.status).toBe('replayed')
      const late = await instance(2)
      await late.init?.()
      expect((await late.list({ status: 'all' })).map((l) => l.eventId)).toEqual(['evt_shared'])
    })

    it('parks a signed event its schema refuses: 200 parked when durable, 422 otherwise; no handler runs', async () => {
      const store = await fleet()()
      const { webhooks, errors, runs } = receiver(store)
      const { body, headers } = await signedDelivery(amountAsString('evt_refused'), SECRET)
      const answer = await deliver(webhooks, body, headers)
      if (store.durable) {
        expect(answer).toEqual({ status: 200, body: { ok: true, event_id: 'evt_refused', status: 'parked' } })
      } else {
        expect(answer.status).toBe(422)
        expect(answer.body.error).toBe('schema_mismatch')
      }
      expect(runs('evt_refused')).toBe(0)
      expect(errors.map((error) => error.constructor)).toEqual([SchemaError])
      const letter = await webhooks.deadLetters.get('evt_refused')
      expect(letter).toMatchObject({ eventId: 'evt_refused', code: 'schema_mismatch', status: 'parked' })
      expect(letter?.reason).toContain('data.settlement_amount')
      expect(new TextDecoder().decode(letter?.body)).toBe(body)
      expect(letter?.headers[SIGNATURE_HEADER]).toBe(headers[SIGNATURE_HEADER])
    })

    it('replays a parked schema mismatch once the schema is fixed: the handler runs once, a second replay is a duplicate', async () => {
      const instance = fleet()
      const { webhooks: broken } = receiver(await instance(0))
      const { body, headers } = await signedDelivery(amountAsString('evt_fixed'), SECRET)
      await deliver(broken, body, headers)
      expect((await broken.replay('evt_fixed')).status).toBe('failed')

      // The fixed release: a new receiver with the corrected schema, over the same letters.
      const fixed = receiver(await instance(1), { fixed: true })
      expect(await fixed.webhooks.replay('evt_fixed')).toEqual({ eventId: 'evt_fixed', status: 'processed' })
      expect(fixed.runs('evt_fixed')).toBe(1)
      const letter = await fixed.webhooks.deadLetters.get('evt_fixed')
      expect(letter?.status).toBe('replayed')
      expect(letter?.replayedAt).toBeInstanceOf(Date)
      expect(await fixed.webhooks.deadLetters.list()).toEqual([])

      expect(await fixed.webhooks.replay('evt_fixed')).toEqual({ eventId: 'evt_fixed', status: 'duplicate' })
      expect(await fixed.webhooks.replayAll()).toEqual([])
      expect(fixed.runs('evt_fixed')).toBe(1)
    })

    it('refuses to replay a stored body altered after parking, and runs nothing', async () => {
      const store = await fleet()()
      const { webhooks: broken } = receiver(store)
      const { body, headers } = await signedDelivery(amountAsString('evt_tampered'), SECRET)
      await deliver(broken, body, headers)
      const letter = (await store.get('evt_tampered')) as DeadLetter
      const altered = new TextEncoder().encode(body.replace('"10.30"', '"99999.30"'))
      expect(altered.length).toBe(letter.body.length + 3)
      await store.park({ ...letter, body: altered })

      const fixed = receiver(store, { fixed: true })
      const outcome = await fixed.webhooks.replay('evt_tampered')
      expect(outcome.status).toBe('failed')
      expect(outcome.status === 'failed' && outcome.error.code).toBe('invalid_signature')
      expect(fixed.runs('evt_tampered')).toBe(0)
      expect((await store.get('evt_tampered'))?.status).toBe('parked')
    })

    it('parks a handler failure on an event signed over 71 hours ago; a younger one is answered 500 as before', async () => {
      const store = await fleet()()
      let failing = true
      const { webhooks, errors, runs } = receiver(store, { failing: () => failing })
      const old = sampleEvent('transaction_settled', {
        eventId: 'evt_last_tries',
        createdAt: new Date(Date.now() - 71.5 * HOUR).toISOString(),
      })
      const young = sampleEvent('transaction_settled', {
        eventId: 'evt_young',
        createdAt: new Date(Date.now() - HOUR).toISOString(),
      })
      const oldDelivery = await signedDelivery(old, SECRET)
      const youngDelivery = await signedDelivery(young, SECRET)

      const oldAnswer = await deliver(webhooks, oldDelivery.body, oldDelivery.headers)
      if (store.durable) {
        expect(oldAnswer).toEqual({ status: 200, body: { ok: true, event_id: 'evt_last_tries', status: 'parked' } })
      } else {
        expect(oldAnswer.status).toBe(500)
      }
      const youngAnswer = await deliver(webhooks, youngDelivery.body, youngDelivery.headers)
      expect(youngAnswer.status).toBe(500)
      expect(youngAnswer.body.error).toBe('handler_failed')
      expect(errors.map((error) => error.constructor)).toEqual([HandlerError, HandlerError])

      const letter = await store.get('evt_last_tries')
      expect(letter).toMatchObject({ code: 'handler_failed', status: 'parked' })
      expect(letter?.reason).toContain('ledger down for evt_last_tries')
      expect(letter?.createdAt?.toISOString()).toBe(old.created_at)
      expect(await store.get('evt_young')).toBeUndefined()

      failing = false
      expect(await webhooks.replay('evt_last_tries')).toEqual({ eventId: 'evt_last_tries', status: 'processed' })
      expect(runs('evt_last_tries')).toBe(1)
    })
  })

  deadLetterViewContract(`${name} through webhooks.deadLetters`, async (namespace) => {
    const store = await fleet(namespace)()
    const { webhooks, runs } = receiver(store)
    return {
      deadLetters: webhooks.deadLetters,
      runs,
      async park(event, reason) {
        const { body, headers } = await signedDelivery(event, SECRET)
        await store.park({
          eventId: event.event_id,
          eventType: event.event_type,
          body: new TextEncoder().encode(body),
          headers,
          code: 'handler_failed',
          reason,
          createdAt: undefined,
          parkedAt: new Date(),
        })
      },
    }
  })
}
