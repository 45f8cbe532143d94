// webhooks.respond: receive's answer handed to a callback, exactly once, whichever way the delivery ends.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import { InternalError, type WebhookError } from '../errors/index.js'
import { createWebhooks } from '../receiver/create.js'
import { gate } from '../test-helpers/index.js'
import type { RawDelivery, WebhookResult } from '../types.js'
import type { RawBody } from '../verify/signature.js'
import type { WebhooksOptions } from '../webhooks-options.js'

const secret = 'whsec_respond_test'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function setup(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({ secret, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors }
}

async function delivery(eventId: string, signWith = secret): Promise<RawDelivery & { body: string }> {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId }), signWith)
  return { method: 'POST', body, getHeader: (name) => (headers as Record<string, string>)[name] }
}

/** A `send` that records every answer it is given. */
function recorder() {
  const sent: WebhookResult[] = []
  return { sent, send: (result: WebhookResult) => void sent.push(result) }
}

/** Resolves once `sent` holds an answer (or after 5 s, for the assertion that follows to fail). */
async function firstAnswer(sent: WebhookResult[]): Promise<WebhookResult | undefined> {
  for (let waited = 0; sent.length === 0 && waited < 5000; waited += 5) await sleep(5)
  return sent[0]
}

describe('webhooks.respond', () => {
  it('answers a valid delivery 200 through send, at once when its handler is synchronous, and runs it once', async () => {
    const { webhooks } = setup()
    const handled: string[] = []
    webhooks.on('transaction_settled', (event) => void handled.push(event.event_id))
    const { sent, send } = recorder()

    webhooks.respond(await delivery('evt_respond_ok'), send)

    // No await between the call and this: the answer was known synchronously, and handed over synchronously.
    expect(sent.map((r) => [r.status, JSON.parse(r.body)])).toEqual([
      [200, { ok: true, event_id: 'evt_respond_ok', status: 'processed' }],
    ])
    await sleep(20)
    expect(sent).toHaveLength(1)
    expect(handled).toEqual(['evt_respond_ok'])
  })

  it('answers an asynchronous handler once it settles, once', async () => {
    const { webhooks } = setup()
    const held = gate()
    webhooks.on('transaction_settled', () => held.promise)
    const { sent, send } = recorder()

    webhooks.respond(await delivery('evt_respond_async'), send)
    expect(sent).toEqual([])
    held.open()

    expect((await firstAnswer(sent))?.status).toBe(200)
    await sleep(20)
    expect(sent).toHaveLength(1)
  })

  it('answers a duplicate 200 duplicate without running the handler again', async () => {
    const { webhooks } = setup()
    let runs = 0
    webhooks.on('transaction_settled', async () => void runs++)
    const raw = await delivery('evt_respond_dup')
    const first = recorder()
    const second = recorder()

    webhooks.respond(raw, first.send)
    await firstAnswer(first.sent)
    webhooks.respond(raw, second.send)

    expect(JSON.parse((await firstAnswer(second.sent))?.body ?? '{}')).toEqual({
      ok: true,
      event_id: 'evt_respond_dup',
      status: 'duplicate',
    })
    expect([first.sent.length, second.sent.length, runs]).toEqual([1, 1, 1])
  })

  it('answers a bad signature 401 and runs no handler', async () => {
    const { webhooks, errors } = setup()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const { sent, send } = recorder()

    webhooks.respond(await delivery('evt_respond_forged', 'whsec_someone_else'), send)

    const answer = await firstAnswer(sent)
    expect([answer?.status, JSON.parse(answer?.body ?? '{}').error]).toEqual([401, 'invalid_signature'])
    await sleep(20)
    expect([sent.length, runs]).toEqual([1, 0])
    expect(errors.map((e) => e.code)).toEqual(['invalid_signature'])
  })

  it('answers a body still arriving at the deadline 408 once, stops the read, and runs nothing when it arrives', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 50 })
    let runs = 0
    webhooks.onAny(() => void runs++)
    const { body, getHeader } = await delivery('evt_respond_slow_body')
    let arrive!: (bytes: RawBody) => void
    const arriving = new Promise<RawBody>((resolve) => {
      arrive = resolve
    })
    let stopped = 0
    const { sent, send } = recorder()

    webhooks.respond({ method: 'POST', body: arriving, getHeader, stopReading: () => void stopped++ }, send)

    const answer = await firstAnswer(sent)
    expect(answer?.status).toBe(408)
    expect(answer?.headers.connection).toBe('close')
    expect(JSON.parse(answer?.body ?? '{}').error).toBe('body_timeout')
    expect(stopped).toBe(1)
    arrive(body)
    await sleep(50)
    expect([sent.length, runs]).toEqual([1, 0])
    expect(errors.map((e) => e.code)).toEqual(['body_timeout'])
  })

  describe('a handler still running at the deadline', () => {
    for (const ending of ['succeeds', 'fails'] as const) {
      it(`is answered 503 once, and send is not called again when it later ${ending}`, async () => {
        const { webhooks, errors } = setup({ deadlineMs: 50 })
        const held = gate()
        const done = gate()
        let runs = 0
        webhooks.on('transaction_settled', async () => {
          if (++runs > 1) return
          await held.promise
          done.open()
          if (ending === 'fails') throw new Error('ledger offline')
        })
        const raw = await delivery(`evt_respond_late_${ending}`)
        const { sent, send } = recorder()

        webhooks.respond(raw, send)

        const answer = await firstAnswer(sent)
        expect(answer?.status).toBe(503)
        expect(answer?.headers['retry-after']).toBeDefined()
        expect(JSON.parse(answer?.body ?? '{}').error).toBe('deadline_exceeded')
        held.open()
        await done.promise
        await sleep(50)
        expect(sent).toHaveLength(1)
        expect(errors.map((e) => e.code)).toEqual(
          ending === 'fails' ? ['deadline_exceeded', 'handler_failed'] : ['deadline_exceeded'],
        )
        // The work went on after the answer: done (the retry is a duplicate), or released (the retry runs it again).
        const retry = recorder()
        webhooks.respond(raw, retry.send)
        const again = await firstAnswer(retry.sent)
        expect(JSON.parse(again?.body ?? '{}').status).toBe(ending === 'fails' ? 'processed' : 'duplicate')
        expect(runs).toBe(ending === 'fails' ? 2 : 1)
      })
    }
  })

  describe('a send that throws', () => {
    const thrower = (calls: WebhookResult[]) => (result: WebhookResult) => {
      calls.push(result)
      throw new Error('socket gone')
    }

    it('is reported to onError as an InternalError, once, and the receiver answers the next delivery', async () => {
      const { webhooks, errors } = setup()
      let runs = 0
      webhooks.on('transaction_settled', () => void runs++)
      const calls: WebhookResult[] = []
      const raw = await delivery('evt_respond_throwing_send')

      expect(() => webhooks.respond(raw, thrower(calls))).not.toThrow()

      expect(calls.map((r) => r.status)).toEqual([200])
      expect(errors).toHaveLength(1)
      expect(errors[0]).toBeInstanceOf(InternalError)
      expect(errors[0]?.cause).toEqual(new Error('socket gone'))
      const { sent, send } = recorder()
      webhooks.respond(await delivery('evt_respond_after_throw'), send)
      expect((await firstAnswer(sent))?.status).toBe(200)
      expect(runs).toBe(2)
    })

    it('from an asynchronous answer is reported too', async () => {
      const { webhooks, errors } = setup()
      webhooks.on('transaction_settled', async () => {})
      const calls: WebhookResult[] = []

      webhooks.respond(await delivery('evt_respond_async_throw'), thrower(calls))

      await firstAnswer(calls)
      await sleep(20)
      expect(calls).toHaveLength(1)
      expect(errors.map((e) => e.constructor)).toEqual([InternalError])
    })

    it('at the deadline leaves the other deliveries due then answered', async () => {
      const { webhooks, errors } = setup({ deadlineMs: 50 })
      const held = gate()
      webhooks.on('transaction_settled', () => held.promise)
      const calls: WebhookResult[] = []
      const { sent, send } = recorder()

      const [throwing, next] = [await delivery('evt_respond_due_throw'), await delivery('evt_respond_due_next')]

      // In one turn: both due at the same timer run, the throwing one first.
      webhooks.respond(throwing, thrower(calls))
      webhooks.respond(next, send)

      expect((await firstAnswer(sent))?.status).toBe(503)
      expect(calls.map((r) => r.status)).toEqual([503])
      expect(errors.filter((e) => e instanceof InternalError)).toHaveLength(1)
      held.open()
    })
  })
})

describe("an adapter's stopReading that throws", () => {
  const never = () => new Promise<RawBody>(() => {})
  const failure = new Error('stream already destroyed')
  const throwing = () => {
    throw failure
  }

  it('is reported, and both deliveries due in the same timer run are still answered 408 by the deadline', async () => {
    const { webhooks, errors } = setup({ deadlineMs: 50 })
    const first = recorder()
    // Signed (an unsigned POST is refused before its body): these bodies are read until the deadline.
    const getHeader = (name: string) => (name === 'service-hmac-sha256' ? 'A'.repeat(64) : undefined)

    webhooks.respond({ method: 'POST', body: never(), getHeader, stopReading: throwing }, first.send)
    const answer = webhooks.receive({ method: 'POST', body: never(), getHeader, stopReading: throwing })

    expect((await firstAnswer(first.sent))?.status).toBe(408)
    expect((await answer).status).toBe(408)
    await sleep(20)
    expect(first.sent).toHaveLength(1)
    const internal = errors.filter((error) => error instanceof InternalError)
    expect(internal.map((error) => error.cause)).toEqual([failure, failure])
  })

  it('is reported while closing, and the delivery is still answered 503 closing', async () => {
    const { webhooks, errors } = setup()
    await webhooks.close({ timeoutMs: 0 })

    const answer = await webhooks.receive({
      method: 'POST',
      body: never(),
      getHeader: () => undefined,
      stopReading: throwing,
    })

    expect([answer.status, JSON.parse(answer.body).error]).toEqual([503, 'closing'])
    expect(errors.filter((error) => error instanceof InternalError).map((error) => error.cause)).toEqual([failure])
  })
})
