import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { ClosingError, SchemaError, StoreError, type WebhookError } from '../errors/index.js'
import { createWebhooks, inProcessQueue, memoryDeadLetterStore, SIGNATURE_HEADER } from '../index.js'
import { sign } from '../verify/signature.js'
import { deadLetterCursor, deadLetterQuery } from './query.js'
import type { DeadLetterStore } from './types.js'

const SECRET = 'whsec_dead_letters_unit'
const HOUR = 60 * 60 * 1000

function settled(id: string, overrides: { amount?: unknown; createdAt?: string } = {}): string {
  const event: Record<string, unknown> = {
    event_type: 'transaction_settled',
    event_id: id,
    merchant_id: 1234,
    created_at: overrides.createdAt ?? new Date().toISOString(),
    data: {
      transaction_id: 'txn_1',
      transaction_amount: 10,
      transaction_surcharge_amount: 0,
      transaction_date: '2026-11-02T15:05:00Z',
      settlement_code: 'FUNDED',
      settlement_amount: overrides.amount ?? 10,
      settlement_date: '2026-11-03T07:59:00Z',
      transaction_net_amount: 10,
    },
  }
  return JSON.stringify(event)
}

async function deliver(
  webhooks: { receive: ReturnType<typeof createWebhooks>['receive'] },
  body: string,
  secret = SECRET,
) {
  const headers: Record<string, string> = {
    [SIGNATURE_HEADER]: await sign(secret, body),
    'content-type': 'application/json',
  }
  const result = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name] })
  return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
}

/** A memory store that says it is durable, for the receiver's durable paths; `fail` makes its calls throw. */
function durableStore(fail: Partial<Record<'init' | 'park' | 'get' | 'markReplayed' | 'shutdown', Error>> = {}) {
  const memory = memoryDeadLetterStore()
  const calls = { init: 0, shutdown: 0 }
  const store: DeadLetterStore = {
    durable: true,
    init() {
      calls.init++
      if (fail.init) throw fail.init
    },
    async park(event) {
      if (fail.park) throw fail.park
      memory.park(event)
    },
    get(eventId) {
      if (fail.get) throw fail.get
      return memory.get(eventId)
    },
    list: (query) => memory.list(query),
    markReplayed(eventId, at) {
      if (fail.markReplayed) throw fail.markReplayed
      return memory.markReplayed(eventId, at)
    },
    shutdown() {
      calls.shutdown++
      if (fail.shutdown) throw fail.shutdown
    },
  }
  return { store, memory, calls, fail }
}

function receiver(
  deadLetters: DeadLetterStore | undefined,
  options: { secret?: Parameters<typeof createWebhooks>[0]['secret'] } = {},
) {
  const errors: WebhookError[] = []
  const runs: string[] = []
  const webhooks = createWebhooks({ secret: options.secret ?? SECRET, deadLetters, logger: { error() {} } })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => {
    runs.push(event.event_id)
  })
  return { webhooks, errors, runs }
}

describe('memoryDeadLetterStore', () => {
  const parked = (id: string, parkedAt = new Date()) => ({
    eventId: id,
    eventType: 'transaction_settled',
    body: new Uint8Array([1, 2, 3]),
    headers: {},
    code: 'schema_mismatch' as const,
    reason: 'r',
    createdAt: undefined,
    parkedAt,
  })

  it('is not durable, and refuses a maxEntries that is not a positive integer', () => {
    expect(memoryDeadLetterStore().durable).toBe(false)
    // The receiver's view says so too, for tools in another process (payhooks dead-letters).
    expect(createWebhooks({ secret: SECRET, deadLetters: memoryDeadLetterStore() }).deadLetters.durable).toBe(false)
    expect(createWebhooks({ secret: SECRET, deadLetters: durableStore().store }).deadLetters.durable).toBe(true)
    expect(createWebhooks({ secret: SECRET }).deadLetters.durable).toBeUndefined()
    expect(() => memoryDeadLetterStore({ maxEntries: 0 })).toThrow(
      new RangeError('memoryDeadLetterStore: maxEntries must be a positive integer'),
    )
  })

  it('holds at most maxEntries: the oldest replayed letter makes room, and with none replayed park throws', () => {
    const store = memoryDeadLetterStore({ maxEntries: 2 })
    store.park(parked('evt_1', new Date(1000)))
    store.park(parked('evt_2', new Date(2000)))
    expect(() => store.park(parked('evt_3'))).toThrow('memoryDeadLetterStore: full (2 parked letters)')
    store.park(parked('evt_2', new Date(3000)))
    expect(store.get('evt_2')?.parkCount).toBe(2)
    store.markReplayed('evt_1', new Date())
    store.park(parked('evt_3'))
    expect(store.size).toBe(2)
    expect(store.get('evt_1')).toBeUndefined()
    expect(store.list().map((letter) => letter.eventId)).toEqual(['evt_3', 'evt_2'])
  })

  it('hands out copies: changing a letter it returned changes nothing it holds', () => {
    const store = memoryDeadLetterStore()
    store.park(parked('evt_copy'))
    const letter = store.get('evt_copy')
    letter?.body.set([9, 9, 9])
    expect(Array.from(store.get('evt_copy')?.body ?? [])).toEqual([1, 2, 3])
  })
})

describe('deadLetterQuery', () => {
  it('fills in the defaults: parked letters, 100 at most, from the first', () => {
    expect(deadLetterQuery()).toEqual({ status: 'parked', limit: 100, offset: 0, order: 'newest' })
    expect(deadLetterQuery({ eventType: 'x', limit: 5 })).toEqual({
      eventType: 'x',
      status: 'parked',
      limit: 5,
      offset: 0,
      order: 'newest',
    })
  })

  it('decodes a keyset cursor into the position it names, and refuses any other text', () => {
    const after = deadLetterCursor({ parkedAt: new Date(1_700_000_000_123), eventId: 'evt_ü/+' })
    expect(deadLetterQuery({ after, order: 'oldest' })).toMatchObject({
      order: 'oldest',
      position: { parkedAt: 1_700_000_000_123, eventId: 'evt_ü/+' },
    })
    expect(deadLetterQuery({ after })).not.toHaveProperty('after')
    const forged = [after.slice(1), '', 'W10', btoa('[1.5,"evt"]'), btoa('[1,""]'), btoa('{}'), 'a b']
    for (const bad of forged) expect(() => deadLetterQuery({ after: bad }, 'q')).toThrow(TypeError)
  })

  it.each([
    [{ status: 'done' }, TypeError, "q: status must be 'parked', 'replayed' or 'all'"],
    [{ code: 'oops' }, TypeError, "q: code must be 'schema_mismatch', 'handler_failed' or 'stale_event'"],
    [{ limit: 0 }, RangeError, 'q: limit must be a positive integer'],
    [{ offset: 1.5 }, RangeError, 'q: offset must be >= 0'],
    [{ parkedAfter: new Date('nope') }, TypeError, 'q: parkedAfter must be a valid Date'],
    [{ parkedBefore: '2026-01-01' }, TypeError, 'q: parkedBefore must be a valid Date'],
    [{ order: 'up' }, TypeError, "q: order must be 'newest' or 'oldest'"],
  ])('refuses %o', (query, type, message) => {
    expect(() => deadLetterQuery(query as never, 'q')).toThrow(new type(message))
  })
})

describe('createWebhooks({ deadLetters })', () => {
  it('refuses something that is not a dead-letter store', () => {
    expect(() => createWebhooks({ secret: SECRET, deadLetters: {} as never })).toThrow(TypeError)
    expect(() =>
      createWebhooks({ secret: SECRET, deadLetters: { ...memoryDeadLetterStore(), durable: 'yes' } as never }),
    ).toThrow('createWebhooks: deadLetters must be a dead-letter store (durable, park, get, list, markReplayed)')
  })

  it('without a store, answers a schema mismatch 422 as before, and dead-letter calls reject', async () => {
    const { webhooks, errors } = receiver(undefined)
    expect((await deliver(webhooks, settled('evt_plain', { amount: '10' }))).status).toBe(422)
    expect(errors.map((error) => error.constructor)).toEqual([SchemaError])
    await expect(webhooks.replay('evt_plain')).rejects.toThrow(
      'no dead-letter store: pass one as createWebhooks({ deadLetters })',
    )
    await expect(webhooks.deadLetters.list()).rejects.toThrow('no dead-letter store')
  })

  it('reports a schema mismatch with the message as parsed, which parking uses without parsing it again', async () => {
    const { store, memory } = durableStore()
    const { webhooks, errors } = receiver(store)
    const body = settled('evt_parsed_once', { amount: '10' })
    const parse = JSON.parse
    let parses = 0
    JSON.parse = (...args: Parameters<typeof JSON.parse>) => {
      if (args[0] === body) parses++
      return parse(...args)
    }
    let answer: Awaited<ReturnType<typeof deliver>>
    try {
      answer = await deliver(webhooks, body)
    } finally {
      JSON.parse = parse
    }
    expect(answer.status).toBe(200)
    expect(parses).toBe(1)
    const [error] = errors as [SchemaError]
    expect(error).toBeInstanceOf(SchemaError)
    expect(error.event).toMatchObject({ event_id: 'evt_parsed_once', data: { settlement_amount: '10' } })
    expect(memory.get('evt_parsed_once')?.createdAt).toEqual(new Date(error.event?.created_at as string))
  })

  it('answers non-2XX and reports a StoreError when parking fails, even with a durable store', async () => {
    const { store } = durableStore({ park: new Error('disk full') })
    const { webhooks, errors } = receiver(store)
    const answer = await deliver(webhooks, settled('evt_unparked', { amount: '10' }))
    expect(answer.status).toBe(422)
    expect(answer.body.error).toBe('schema_mismatch')
    expect(errors.map((error) => error.constructor)).toEqual([SchemaError, StoreError])
    expect(errors[1]?.message).toBe('store dead-letter park failed for evt_unparked: disk full')
    expect((errors[1] as StoreError).answered).toEqual({ status: 422, code: 'schema_mismatch' })
  })

  it('logs a failed park with the answer the delivery got (422), not the store error’s 503', async () => {
    const { store } = durableStore({ park: new Error('relation "payhooks_dead_letters" does not exist') })
    const lines: { fields: Record<string, unknown>; message: string }[] = []
    const logger = {
      error: (fields: Record<string, unknown>, message: string) => void lines.push({ fields, message }),
      warn() {},
      info() {},
    }
    const webhooks = createWebhooks({ secret: SECRET, deadLetters: store, logger, checkAtStart: false })
    const answer = await deliver(webhooks, settled('evt_no_table', { amount: '10' }))
    expect(answer.status).toBe(422)
    const failure = lines.find((line) => line.fields.code === 'store_unavailable')
    expect(failure?.message).toMatch(
      /^\[payhooks\] store_unavailable \(answered 422 schema_mismatch\): store dead-letter park failed for evt_no_table/,
    )
    expect(failure?.message).not.toContain('503')
    expect(failure?.fields).toMatchObject({
      status: 422,
      answered_code: 'schema_mismatch',
      operation: 'dead-letter park',
    })
  })

  it("runs the store's init once before parking, again after it failed", async () => {
    const { store, calls, fail } = durableStore({ init: new Error('no table yet') })
    const { webhooks, errors } = receiver(store)
    expect((await deliver(webhooks, settled('evt_init_1', { amount: '10' }))).status).toBe(422)
    expect(errors[1]?.message).toBe('store dead-letter init failed: no table yet')
    fail.init = undefined
    expect((await deliver(webhooks, settled('evt_init_2', { amount: '10' }))).status).toBe(200)
    expect((await deliver(webhooks, settled('evt_init_3', { amount: '10' }))).status).toBe(200)
    expect(calls.init).toBe(2)
  })

  it('parks a schema mismatch in queue mode too, before anything is queued', async () => {
    const { store, memory } = durableStore()
    const queue = inProcessQueue()
    const webhooks = createWebhooks({ secret: SECRET, deadLetters: store, queue, logger: { error() {} } })
    const runs: string[] = []
    webhooks.onAny((event) => {
      runs.push(event.event_id)
    })
    expect((await deliver(webhooks, settled('evt_queued_mismatch', { amount: '10' }))).body.status).toBe('parked')
    await queue.drain()
    expect(runs).toEqual([])
    expect(memory.get('evt_queued_mismatch')?.code).toBe('schema_mismatch')
    await queue.close()
  })

  it('does not park a handler failure on an event without created_at: its age cannot be told', async () => {
    const { store } = durableStore()
    const webhooks = createWebhooks({ secret: SECRET, deadLetters: store, logger: { error() {} } })
    webhooks.onAny(() => {
      throw new Error('ledger down')
    })
    // payment_created has no schema, so nothing requires its created_at.
    const ageless = JSON.stringify({ event_type: 'payment_created', event_id: 'evt_ageless', data: {} })
    expect((await deliver(webhooks, ageless)).status).toBe(500)
    expect((await deliver(webhooks, settled('evt_bad_date', { createdAt: 'yesterday' }))).status).toBe(500)
    const old = new Date(Date.now() - 71.5 * HOUR).toISOString()
    expect((await deliver(webhooks, settled('evt_old', { createdAt: old }))).status).toBe(200)
    expect((await store.list()).map((letter) => letter.eventId)).toEqual(['evt_old'])
  })

  it('parks on the last tries a created_at without a zone, read as UTC even on a server west of UTC', async () => {
    vi.stubEnv('TZ', 'America/New_York')
    onTestFinished(() => {
      vi.unstubAllEnvs()
    })
    const { store } = durableStore()
    const webhooks = createWebhooks({ secret: SECRET, deadLetters: store, logger: { error() {} } })
    webhooks.onAny(() => {
      throw new Error('ledger down')
    })
    // 71.5 hours ago in UTC, written without its zone: Date.parse would read it as New York time, 4.5 hours
    // younger than the 71-hour mark, and answer 500 on one of the last tries instead of parking it.
    const zoneless = new Date(Date.now() - 71.5 * HOUR).toISOString().slice(0, -1)
    expect(Date.now() - Date.parse(zoneless)).toBeLessThan(71 * HOUR)
    expect((await deliver(webhooks, settled('evt_zoneless', { createdAt: zoneless }))).status).toBe(200)
    const [letter] = await store.list()
    expect(letter?.eventId).toBe('evt_zoneless')
    expect(letter?.createdAt?.toISOString()).toBe(`${zoneless}Z`)
  })

  it('replays with the secrets of the moment: a letter signed with a retired secret fails, the resolver sees its headers', async () => {
    const { store } = durableStore()
    const seen: (string | null | undefined)[] = []
    let secrets = ['whsec_old']
    const { webhooks, runs } = receiver(store, {
      secret: ({ getHeader }) => {
        seen.push(getHeader('content-type'))
        return secrets
      },
    })
    expect((await deliver(webhooks, settled('evt_rotated', { amount: '10' }), 'whsec_old')).status).toBe(200)
    secrets = ['whsec_new']
    const refused = await webhooks.replay('evt_rotated')
    expect(refused.status === 'failed' && refused.error.code).toBe('invalid_signature')
    expect(runs).toEqual([])
    expect(seen).toEqual(['application/json', 'application/json'])
  })

  it('reports a failed markReplayed but still answers processed; a later replay is a duplicate and marks it', async () => {
    const { store, memory, fail } = durableStore({ markReplayed: new Error('read-only') })
    const webhooks = createWebhooks({ secret: SECRET, deadLetters: store, logger: { error() {} } })
    const errors: WebhookError[] = []
    webhooks.onError((error) => errors.push(error))
    const old = new Date(Date.now() - 72 * HOUR).toISOString()
    let failing = true
    webhooks.onAny(() => {
      if (failing) throw new Error('ledger down')
    })
    await deliver(webhooks, settled('evt_mark', { createdAt: old }))
    failing = false
    expect(await webhooks.replay('evt_mark')).toEqual({ eventId: 'evt_mark', status: 'processed' })
    expect(errors.at(-1)?.message).toBe('store dead-letter mark failed for evt_mark: read-only')
    expect(memory.get('evt_mark')?.status).toBe('parked')
    fail.markReplayed = undefined
    expect(await webhooks.replay('evt_mark')).toEqual({ eventId: 'evt_mark', status: 'duplicate' })
    expect(memory.get('evt_mark')?.status).toBe('replayed')
  })

  it('replays a letter older than maxEventAgeMs: the stale-event check guards deliveries, not replays', async () => {
    const { store } = durableStore()
    const { webhooks, runs } = receiver(store)
    // Parked on the last tries (71 h+), replayed days later: past the 73-hour maxEventAgeMs by then.
    const body = settled('evt_old_letter', { createdAt: new Date(Date.now() - 100 * HOUR).toISOString() })
    store.park({
      eventId: 'evt_old_letter',
      eventType: 'transaction_settled',
      body: new TextEncoder().encode(body),
      headers: { [SIGNATURE_HEADER]: await sign(SECRET, body), 'content-type': 'application/json' },
      code: 'handler_failed',
      reason: 'ledger down',
      createdAt: undefined,
      parkedAt: new Date(Date.now() - 28 * HOUR),
    })
    // A manual resend of it now is parked over the letter (never run on its own word), still replayable.
    expect((await deliver(webhooks, body)).body.status).toBe('parked')
    expect(await store.get('evt_old_letter')).toMatchObject({ code: 'stale_event', parkCount: 2, status: 'parked' })
    expect(runs).toEqual([])
    expect(await webhooks.replay('evt_old_letter')).toEqual({ eventId: 'evt_old_letter', status: 'processed' })
    expect(runs).toEqual(['evt_old_letter'])
    // Handled now: a later resend is a duplicate, and the handlers ran once.
    expect((await deliver(webhooks, body)).body.status).toBe('duplicate')
    expect(runs).toEqual(['evt_old_letter'])
  })

  it('rejects a replay when the store cannot be read, and refuses an empty id', async () => {
    const { store } = durableStore({ get: new Error('connection reset') })
    const { webhooks } = receiver(store)
    await expect(webhooks.replay('evt_x')).rejects.toThrow(
      new StoreError('dead-letter get', new Error('connection reset'), 'evt_x'),
    )
    await expect(webhooks.replay('')).rejects.toThrow(TypeError)
  })

  it('shuts the dead-letter store down on close, reporting a failure; later calls reject with ClosingError', async () => {
    const { store, calls } = durableStore({ shutdown: new Error('busy') })
    const { webhooks, errors } = receiver(store)
    await webhooks.close()
    await webhooks.close()
    expect(calls.shutdown).toBe(1)
    expect(errors.map((error) => error.message)).toEqual(['store dead-letter shutdown failed: busy'])
    await expect(webhooks.replay('evt_closed')).rejects.toThrow(ClosingError)
    await expect(webhooks.replayAll()).rejects.toThrow(ClosingError)
    await expect(webhooks.deadLetters.get('evt_closed')).rejects.toThrow(ClosingError)
  })

  it('waits on close for a replay still running', async () => {
    const { store } = durableStore()
    let release!: () => void
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    const webhooks = createWebhooks({ secret: SECRET, deadLetters: store, logger: { error() {} } })
    let failing = true
    let finished = false
    webhooks.onAny(async () => {
      if (failing) throw new Error('ledger down')
      await gate
      finished = true
    })
    await deliver(webhooks, settled('evt_slow', { createdAt: new Date(Date.now() - 72 * HOUR).toISOString() }))
    failing = false
    const replayed = webhooks.replay('evt_slow')
    await new Promise((resolve) => setTimeout(resolve, 10))
    const closed = webhooks.close({ timeoutMs: 10_000 })
    setTimeout(release, 20)
    await closed
    expect(finished).toBe(true)
    expect((await replayed).status).toBe('processed')
  })
})
