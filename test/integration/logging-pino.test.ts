// A real pino logger as `logger`: failures and warnings come out as JSON lines with payhooks' fields, and never
// with the secret or the body.
import { Writable } from 'node:stream'
import { createWebhooks, memoryStore, type WebhookStore } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import pino from 'pino'
import { describe, expect, it } from 'vitest'

const SECRET = 'whsec_pino_logging'

/** A pino logger writing to memory, synchronously, and the JSON lines it wrote. */
function pinoLogger() {
  const lines: Record<string, unknown>[] = []
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line))
      callback()
    },
  })
  return { logger: pino({ base: undefined, timestamp: false }, stream), lines }
}

async function deliver(webhooks: ReturnType<typeof createWebhooks>, event: unknown, secret = SECRET) {
  const { body, headers } = await signedDelivery(event, secret)
  return webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
}

describe('pino as the logger', () => {
  it('logs failures at error level (signature refusals at warn) with code, status, event id and type as JSON fields', async () => {
    const { logger, lines } = pinoLogger()
    const webhooks = createWebhooks({ secret: SECRET, logger })
    webhooks.on('transaction_settled', () => {
      throw new Error('ledger down')
    })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_pino_1' })
    expect((await deliver(webhooks, event)).status).toBe(500)
    expect((await deliver(webhooks, event, 'whsec_wrong')).status).toBe(401)
    expect(lines).toEqual([
      {
        level: 50,
        code: 'handler_failed',
        status: 500,
        event_id: 'evt_pino_1',
        event_type: 'transaction_settled',
        msg: '[payhooks] 500 handler_failed: handler failed for transaction_settled evt_pino_1: ledger down',
      },
      {
        // A request refused for its signature is a warning: any sender can make one.
        level: 40,
        code: 'invalid_signature',
        status: 401,
        signature_hint: 'wrong_secret_or_bytes',
        msg: expect.stringMatching(
          /^\[payhooks\] 401 invalid_signature: signature does not match the body \(hint wrong_secret_or_bytes: no secret /,
        ),
      },
    ])
    const written = JSON.stringify(lines)
    expect(written).not.toContain(SECRET)
    expect(written).not.toContain('settlement_amount')
  })

  it('logs a store failure with the operation, and start-up warnings at warn level with their code', async () => {
    const { logger, lines } = pinoLogger()
    const store: WebhookStore = {
      ...memoryStore(),
      claim: () => Promise.reject(new Error('ECONNREFUSED 127.0.0.1:6379')),
    }
    const webhooks = createWebhooks({ secret: ` ${SECRET}`, logger, store })
    webhooks.on('transaction_setled', () => {})
    expect(lines.map(({ level, code }) => ({ level, code }))).toEqual([
      { level: 40, code: 'secret_whitespace' },
      { level: 40, code: 'unknown_event_type' },
    ])
    expect(lines[1]).toMatchObject({ event_type: 'transaction_setled' })
    expect(JSON.stringify(lines)).not.toContain(SECRET)
    lines.length = 0
    await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_pino_2' }), ` ${SECRET}`)
    expect(lines).toEqual([
      {
        level: 50,
        code: 'store_unavailable',
        status: 503,
        event_id: 'evt_pino_2',
        event_type: 'transaction_settled',
        operation: 'claim',
        msg: '[payhooks] 503 store_unavailable: store claim failed for evt_pino_2: ECONNREFUSED 127.0.0.1:6379',
      },
    ])
  })
})
