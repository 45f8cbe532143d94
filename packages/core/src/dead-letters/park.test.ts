import { describe, expect, it, onTestFinished, vi } from 'vitest'
import { SchemaError, StoreError } from '../errors/index.js'
import { createWebhooks, inProcessQueue, memoryDeadLetterStore } from '../index.js'
import { deliver, durableStore, HOUR, receiver, SECRET, settled } from '../test-helpers/dead-letters.js'

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
})
