// The signature doctor inside a receiver: the hint reaches onError and the log, never the answer, and the doctor
// runs only after a failed check, within its budget of time.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SignatureError, type WebhookError } from '../errors/index.js'
import { createWebhooks } from '../receiver/create.js'
import type { RawDelivery } from '../types.js'
import { cryptoProvider, sign } from '../verify/signature.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import { DOCTOR_BURST_MS, DOCTOR_MS_PER_SECOND } from './budget.js'
import { HINTS } from './hints.js'

const secret = 'whsec_doctor_receiver'
const event = sampleEvent('transaction_settled', { eventId: 'evt_doctor_receiver' })
const compact = JSON.stringify(event)

afterEach(() => {
  vi.useRealTimers()
  vi.restoreAllMocks()
})

function receiver(options: Partial<WebhooksOptions> = {}) {
  const webhooks = createWebhooks({ secret, logger: { error() {} }, ...options })
  const errors: WebhookError[] = []
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors }
}

const delivery = (body: string, signature: string): RawDelivery => ({
  method: 'POST',
  body,
  getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined),
})

describe('the signature doctor in a receiver', () => {
  it('gives onError the hint of a re-serialized body, and the answer none of it', async () => {
    const { webhooks, errors } = receiver()
    const signature = await sign(secret, compact)
    const answer = await webhooks.receive(delivery(JSON.stringify(event, null, 2), signature))
    expect(answer.status).toBe(401)
    const [error] = errors
    expect(error).toBeInstanceOf(SignatureError)
    expect((error as SignatureError).hint).toEqual(HINTS.body_reserialized)
    const sent = JSON.stringify(answer)
    expect(sent).not.toContain('body_reserialized')
    expect(sent).not.toContain('re-serialized')
    expect(JSON.parse(answer.body)).toEqual({ error: 'invalid_signature', message: expect.any(String) })
  })

  it('diagnoses a sha256= header as header_prefix, still 401', async () => {
    const { webhooks, errors } = receiver()
    const signature = await sign(secret, compact)
    const answer = await webhooks.receive(delivery(compact, `sha256=${signature.toLowerCase()}`))
    expect(answer.status).toBe(401)
    expect((errors[0] as SignatureError).message).toBe('service-hmac-sha256 must be 64 hex characters')
    expect((errors[0] as SignatureError).hint).toEqual(HINTS.header_prefix)
  })

  it('diagnoses with the secrets a resolver gives, and calls no resolver for a header with no digest in it', async () => {
    const resolver = vi.fn(() => [`${secret}\n`])
    const { webhooks, errors } = receiver({ secret: resolver })
    const signature = await sign(secret, compact)
    expect((await webhooks.receive(delivery(compact, signature))).status).toBe(401)
    expect((errors[0] as SignatureError).hint).toEqual(HINTS.secret_whitespace)
    expect(resolver).toHaveBeenCalledTimes(1)
    expect((await webhooks.receive(delivery(compact, 'garbage'))).status).toBe(401)
    expect((errors[1] as SignatureError).hint).toEqual(HINTS.malformed_header)
    expect(resolver).toHaveBeenCalledTimes(1)
  })

  it('runs only after a failed check: one HMAC check for a good delivery, more for a bad one', async () => {
    const { webhooks } = receiver()
    const match = vi.spyOn(cryptoProvider, 'match')
    const good = await signedDelivery(event, secret)
    expect((await webhooks.receive(delivery(good.body, good.headers['service-hmac-sha256']))).status).toBe(200)
    expect(match).toHaveBeenCalledTimes(1)
    match.mockClear()
    const bad = await signedDelivery(event, 'whsec_wrong')
    expect((await webhooks.receive(delivery(bad.body, bad.headers['service-hmac-sha256']))).status).toBe(401)
    expect(match.mock.calls.length).toBeGreaterThan(1)
  })

  it('charges the doctor the time its diagnoses take, not their count: cheap ones are never cut off', async () => {
    // HMACs that take no time on a clock that stands still: 200 failed checks a second are all diagnosed.
    vi.spyOn(performance, 'now').mockReturnValue(1_000)
    const { webhooks, errors } = receiver()
    const signature = await sign(secret, compact)
    for (let i = 0; i < 200; i++) await webhooks.receive(delivery(`${compact}\n`, signature))
    expect(errors.map((error) => (error as SignatureError).hint?.code)).toEqual(Array(200).fill('trailing_newline'))
  })

  it(`stops diagnosing once diagnoses took ${DOCTOR_BURST_MS} ms, and refills at ${DOCTOR_MS_PER_SECOND} ms a second`, async () => {
    // Every HMAC takes 1 ms: a trailing newline is found by the second candidate, 2 ms of doctor time.
    let now = 1_000
    vi.spyOn(performance, 'now').mockImplementation(() => now)
    const { webhooks, errors } = receiver()
    const signature = await sign(secret, compact)
    const match = cryptoProvider.match.bind(cryptoProvider)
    const hmacs = vi.spyOn(cryptoProvider, 'match').mockImplementation((secrets, body, header) => {
      now += 1
      return match(secrets, body, header)
    })
    for (let i = 0; i < 20; i++) await webhooks.receive(delivery(`${compact}\n`, signature))
    const hints = errors.map((error) => (error as SignatureError).hint?.code)
    const diagnosed = hints.indexOf('not_diagnosed')
    // Each diagnosis cost 2 ms and the clock refilled a little meanwhile: a few more than 10 / 2.
    expect(diagnosed).toBeGreaterThanOrEqual(DOCTOR_BURST_MS / 2)
    expect(diagnosed).toBeLessThanOrEqual(DOCTOR_BURST_MS / 2 + 2)
    expect(hints).toEqual([
      ...Array(diagnosed).fill('trailing_newline'),
      ...Array(20 - diagnosed).fill('not_diagnosed'),
    ])
    // Past the budget, a failed check costs its one HMAC and no more.
    hmacs.mockClear()
    await webhooks.receive(delivery(`${compact}\n`, signature))
    expect(hmacs).toHaveBeenCalledTimes(1)
    now += 1_000
    await webhooks.receive(delivery(`${compact}\n`, signature))
    expect((errors.at(-1) as SignatureError).hint?.code).toBe('trailing_newline')
  })

  it('diagnoses one failed check at a time: those arriving meanwhile get not_diagnosed', async () => {
    const { webhooks, errors } = receiver()
    const signature = await sign(secret, compact)
    const answers = await Promise.all([1, 2].map(() => webhooks.receive(delivery(`${compact}\n`, signature))))
    expect(answers.map((answer) => answer.status)).toEqual([401, 401])
    const hints = errors.map((error) => (error as SignatureError).hint?.code)
    expect(hints.sort()).toEqual(['not_diagnosed', 'trailing_newline'])
  })
})
