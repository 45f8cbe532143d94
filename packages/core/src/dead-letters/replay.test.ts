import { describe, expect, it } from 'vitest'
import { ClosingError, StoreError, type WebhookError } from '../errors/index.js'
import { createWebhooks, SIGNATURE_HEADER } from '../index.js'
import { deliver, durableStore, HOUR, receiver, SECRET, settled } from '../test-helpers/dead-letters.js'
import { sign } from '../verify/signature.js'

describe('createWebhooks({ deadLetters })', () => {
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
