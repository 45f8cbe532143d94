// examples/nest, the real Nest app (compiled by `tsc --build`), listening on a loopback port, passes the URL
// scenario list; and what happens without its `rawBody: true`.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { createApp } from '../../examples/nest/dist/app.js'
import { PaymentWebhooks } from '../../examples/nest/dist/payment-webhooks.service.js'
import { addTestHooks, type RunningUrlTarget, urlScenarios } from '../fixtures/url-scenarios.js'

const secret = 'whsec_nest_example_test'

/** Starts the example with Nest's log lines (the handlers' included) captured, on a free loopback port. */
async function start(options: { rawBody?: boolean } = {}) {
  vi.stubEnv('WEBHOOK_SECRET', secret)
  const lines: string[] = []
  const print = (message: unknown) => void lines.push(String(message))
  // abortOnError: false, so a failing start rejects here instead of exiting the test process.
  const app = await createApp({ ...options, abortOnError: false, logger: { log: print, error: print, warn: print } })
  await app.listen(0, '127.0.0.1')
  const url = `${await app.getUrl()}/webhooks`
  return { app, lines, url }
}

afterEach(() => {
  vi.unstubAllEnvs()
})

describe('examples/nest (NestFactory.create(AppModule, { rawBody: true }), Express platform)', () => {
  let started: Awaited<ReturnType<typeof start>> | undefined
  beforeAll(async () => {
    started = await start()
    addTestHooks(started.app.get(PaymentWebhooks).receiver, (line) => started?.lines.push(line))
  })
  afterAll(async () => {
    await started?.app.close()
  })

  urlScenarios(
    // Nest's JSON parser reads the body first (100 kb default limit, its own 413 once the body has ended);
    // a @Post() route leaves other methods to Nest's 404.
    { secret, bodyLimit: 100 * 1024, kitReadsBody: false, otherMethodsStatus: 404, deadlineMs: 5000 },
    (): RunningUrlTarget => {
      if (!started) throw new Error('the Nest app did not start')
      const { url, lines } = started
      return { url, lines: () => lines }
    },
  )

  it('verifies a body Nest does not parse (text/plain) from the request stream', async () => {
    if (!started) throw new Error('the Nest app did not start')
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, secret)

    const res = await fetch(started.url, {
      method: 'POST',
      body,
      headers: { ...headers, 'content-type': 'text/plain' },
    })

    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ ok: true, event_id: event.event_id, status: 'processed' })
    expect(started.lines.some((line) => line.startsWith(`transaction_settled ${event.event_id}`))).toBe(true)
  })
})

describe('examples/nest without rawBody: true', () => {
  it('answers 500 raw_body_unavailable, since Nest parsed the JSON and dropped the bytes, and runs nothing', async () => {
    const { app, lines, url } = await start({ rawBody: false })
    try {
      const event = sampleEvent('transaction_settled')
      const { body, headers } = await signedDelivery(event, secret)

      const res = await fetch(url, { method: 'POST', body, headers })

      expect(res.status).toBe(500)
      expect((await res.json()).error).toBe('raw_body_unavailable')
      expect(lines.filter((line) => line.includes('raw_body_unavailable'))).toHaveLength(1)
      expect(lines.filter((line) => line.includes(String(event.event_id)))).toEqual([])
    } finally {
      await app.close()
    }
  })
})
