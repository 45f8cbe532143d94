// Logging: the one-line default, structured fields for loggers with `info`, the earlier `{ error(line) }` shape, and
// the start-up warnings, each given once.
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import * as v from 'valibot'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { SchemaError } from '../errors/index.js'
import { memoryStore } from '../memory/store.js'
import { inProcessQueue } from '../queue/queue.js'
import { createWebhooks } from '../receiver/create.js'
import { HINTS } from '../signature-doctor/index.js'
import type { WebhookStore } from '../store.js'
import type { VerifiedEvent, WebhookQueue, Webhooks } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import type { LogFields, Logger } from './log.js'

const secret = 'whsec_logging_test_secret'

afterEach(() => {
  vi.unstubAllEnvs()
  vi.restoreAllMocks()
})

/** A structured logger recording every call's arguments, as pino or console would receive them. */
function structured() {
  const calls: { level: 'error' | 'warn' | 'info'; args: unknown[] }[] = []
  const logger = {
    error: (...args: unknown[]) => calls.push({ level: 'error', args }),
    warn: (...args: unknown[]) => calls.push({ level: 'warn', args }),
    info: (...args: unknown[]) => calls.push({ level: 'info', args }),
  }
  return { logger, calls }
}

/** A logger of the earlier shape, `{ error(line), warn?(line) }`, recording what it is called with. */
function lines(withWarn = true) {
  const errors: unknown[][] = []
  const warnings: unknown[][] = []
  const logger: Logger = withWarn
    ? { error: (...args: unknown[]) => errors.push(args), warn: (...args: unknown[]) => warnings.push(args) }
    : { error: (...args: unknown[]) => errors.push(args) }
  return { logger, errors, warnings }
}

async function deliver(webhooks: Pick<Webhooks<unknown>, 'receive'>, event: unknown, signWith = secret) {
  const { body, headers } = await signedDelivery(event, signWith)
  return webhooks.receive({ body, getHeader: (name) => headers[name as keyof typeof headers] })
}

/** A queue that is not the in-process one, as `bullmqQueue` is not. */
const durableQueue = (): WebhookQueue => ({ enqueue: async (_event: VerifiedEvent) => {} })

/** The line of a body signed with a secret the receiver does not hold: the signature doctor's hint appended. */
const WRONG_SECRET_LINE = `[payhooks] 401 invalid_signature: signature does not match the body (hint wrong_secret_or_bytes: ${HINTS.wrong_secret_or_bytes.message})`

const codes = (calls: { args: unknown[] }[]) => calls.map((call) => (call.args[0] as LogFields).code)

describe('logging failures', () => {
  it('prints one readable line per failure on the console by default (a signature refusal on console.warn)', async () => {
    const error = vi.spyOn(console, 'error').mockImplementation(() => {})
    const warning = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const webhooks = createWebhooks({ secret })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_log_1' })
    expect((await deliver(webhooks, event, 'whsec_wrong')).status).toBe(401)
    expect(warning.mock.calls).toEqual([[WRONG_SECRET_LINE]])
    expect(error.mock.calls).toEqual([])
  })

  it('calls a logger with info (pino, console) as error(fields, message), fields without secret or body', async () => {
    const { logger, calls } = structured()
    const webhooks = createWebhooks({ secret, logger })
    webhooks.on('transaction_settled', () => {
      throw new Error('ledger down')
    })
    const event = sampleEvent('transaction_settled', { eventId: 'evt_log_2' })
    expect((await deliver(webhooks, event)).status).toBe(500)
    expect(calls).toEqual([
      {
        level: 'error',
        args: [
          { code: 'handler_failed', status: 500, event_id: 'evt_log_2', event_type: 'transaction_settled' },
          '[payhooks] 500 handler_failed: handler failed for transaction_settled evt_log_2: ledger down',
        ],
      },
    ])
    const logged = JSON.stringify(calls)
    expect(logged).not.toContain(secret)
    expect(logged).not.toContain(String((event.data as { settlement_amount: number }).settlement_amount))
  })

  it('logs a schema mismatch with the fields at fault, not the values the body held', async () => {
    const { logger, calls } = structured()
    const webhooks = createWebhooks({ secret, logger })
    const event = sampleEvent('merchant_activated_for_payment_type', { eventId: 'evt_log_schema' })
    Object.assign(event.data as object, { email: 4_155_550_123, merchant_id: 'merchant-secret-name' })
    expect((await deliver(webhooks, event)).status).toBe(422)
    expect(calls.map((call) => call.args)).toEqual([
      [
        {
          code: 'schema_mismatch',
          status: 422,
          event_id: 'evt_log_schema',
          event_type: 'merchant_activated_for_payment_type',
        },
        '[payhooks] 422 schema_mismatch: merchant_activated_for_payment_type evt_log_schema does not match its schema at data.email, data.merchant_id',
      ],
    ])
    expect(JSON.stringify(calls)).not.toMatch(/4155550123|merchant-secret-name/)
  })

  it('gives every schema issue to onError and to the log, none hidden behind a count', async () => {
    const event = sampleEvent('transaction_settled', { eventId: 'evt_log_six' })
    const wrong = [
      'transaction_amount',
      'settlement_amount',
      'settlement_code',
      'transaction_net_amount',
      'transaction_fees_amount',
      'settlement_date',
    ]
    for (const field of wrong) (event.data as Record<string, unknown>)[field] = { not: 'this' }
    const paths = wrong.map((field) => `data.${field}`)

    const reported: SchemaError[] = []
    const listened = createWebhooks({ secret }).onError((error) => reported.push(error as SchemaError))
    expect((await deliver(listened, event)).status).toBe(422)
    expect(reported[0]?.issues.map((issue) => issue.path).sort()).toEqual([...paths].sort())
    for (const path of paths) expect(reported[0]?.message).toContain(`${path}: `)
    expect(reported[0]?.message).not.toMatch(/more\)/)

    const { logger, calls } = structured()
    expect((await deliver(createWebhooks({ secret, logger }), event)).status).toBe(422)
    const line = calls[0]?.args[1] as string
    for (const path of paths) expect(line).toContain(path)
    expect(line).not.toMatch(/more\)/)
  })

  it('adds the failed store operation to the fields of a store error', async () => {
    const { logger, calls } = structured()
    const store: WebhookStore = {
      claim: () => {
        throw new Error('connection refused')
      },
      extend: () => true,
      complete: () => true,
      release: () => true,
    }
    const webhooks = createWebhooks({ secret, logger, store })
    await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_log_3' }))
    expect(calls.map((call) => call.args[0])).toEqual([
      {
        code: 'store_unavailable',
        status: 503,
        event_id: 'evt_log_3',
        event_type: 'transaction_settled',
        operation: 'claim',
      },
    ])
  })

  it('logs identical store failures once a second, then how many more there were; another cause at once', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    try {
      const { logger, calls } = structured()
      let cause = 'OOM command not allowed when used memory > maxmemory'
      const store: WebhookStore = {
        claim: () => {
          throw new Error(cause)
        },
        extend: () => true,
        complete: () => true,
        release: () => true,
      }
      const webhooks = createWebhooks({ secret, logger, store })
      for (let i = 0; i < 25; i++) {
        expect((await deliver(webhooks, sampleEvent('transaction_settled', { eventId: `evt_oom_${i}` }))).status).toBe(
          503,
        )
      }
      expect(calls.map((call) => call.args[1])).toEqual([
        '[payhooks] 503 store_unavailable: store claim failed for evt_oom_0: OOM command not allowed when used memory > maxmemory',
      ])
      cause = 'connection refused'
      await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_refused' }))
      expect(calls).toHaveLength(2)
      vi.advanceTimersByTime(1000)
      expect(calls).toHaveLength(3)
      expect(calls[2]).toMatchObject({
        level: 'error',
        args: [
          { code: 'store_unavailable', operation: 'claim', event_id: 'evt_oom_24', suppressed: 24 },
          expect.stringMatching(/evt_oom_24: OOM .* \(and 24 more like it in the last 1 s, not logged one by one\)$/),
        ],
      })
      vi.advanceTimersByTime(5000)
      expect(calls).toHaveLength(3)
    } finally {
      vi.useRealTimers()
    }
  })

  it('passes console the fields then the message, which it prints', async () => {
    const warning = vi.spyOn(console, 'warn').mockImplementation(() => {})
    const webhooks = createWebhooks({ secret, logger: console })
    await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_wrong')
    expect(warning.mock.calls).toEqual([
      [{ code: 'invalid_signature', status: 401, signature_hint: 'wrong_secret_or_bytes' }, WRONG_SECRET_LINE],
    ])
  })

  it('still calls a logger of the earlier { error(line) } shape with the line alone', async () => {
    const { logger, errors } = lines(false)
    const webhooks = createWebhooks({ secret, logger })
    await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_wrong')
    expect(errors).toEqual([[WRONG_SECRET_LINE]])
  })

  it('logs a throwing onError listener with the failure it was given', async () => {
    const { logger, calls } = structured()
    const webhooks = createWebhooks({ secret, logger })
    webhooks.onError(() => {
      throw new Error('listener bug')
    })
    await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_wrong')
    expect(calls.map((call) => call.args)).toEqual([
      [
        {
          code: 'on_error_listener_threw',
          error_code: 'invalid_signature',
          status: 401,
          signature_hint: 'wrong_secret_or_bytes',
        },
        '[payhooks] onError listener threw: Error: listener bug',
      ],
    ])
  })
})

describe('log lines of hostile text', () => {
  it('escapes control characters in the default line of a failure, such as a CR in what a handler threw', async () => {
    const { logger, errors } = lines(false)
    const webhooks = createWebhooks({ secret, logger })
    webhooks.on('transaction_settled', () => {
      throw new Error('db down\r[payhooks] 200 forged')
    })
    await deliver(webhooks, sampleEvent('transaction_settled', { eventId: 'evt_log_cr' }))
    expect(errors).toEqual([
      [
        '[payhooks] 500 handler_failed: handler failed for transaction_settled evt_log_cr: db down\\r[payhooks] 200 forged',
      ],
    ])
  })

  it('escapes control characters in what it logs, so that a listener error cannot split the line', async () => {
    const { logger, errors } = lines(false)
    const webhooks = createWebhooks({ secret, logger })
    webhooks.onError(() => {
      throw new Error('bug\r[payhooks] 200 forged\u0000')
    })
    await deliver(webhooks, sampleEvent('transaction_settled'), 'whsec_wrong')
    expect(errors).toEqual([['[payhooks] onError listener threw: Error: bug\\r[payhooks] 200 forged\\u0000']])
  })
})

describe('start-up warnings, each once', () => {
  const warned = (options: Partial<WebhooksOptions>) => {
    const { logger, calls } = structured()
    createWebhooks({ secret, logger, ...options })
    return calls
  }

  it('warns about a memoryStore behind a queue other than the in-process one, once per store', () => {
    const { logger, calls } = structured()
    const store = memoryStore()
    createWebhooks({ secret, logger, store, queue: durableQueue() })
    createWebhooks({ secret, logger, store, queue: durableQueue() })
    expect(calls.map((call) => call.level)).toEqual(['warn'])
    expect(codes(calls)).toEqual(['memory_store_with_queue'])
    expect(calls[0]?.args[1]).toMatch(/^\[payhooks\] memoryStore with a queue: .*Use a shared store/)
    // The default store is a memoryStore too; the in-process queue is the consistent one-process set-up.
    expect(codes(warned({ queue: durableQueue() }))).toEqual(['memory_store_with_queue'])
    expect(warned({ queue: inProcessQueue() })).toEqual([])
    const shared: WebhookStore = { ...memoryStore() }
    expect(warned({ store: shared, queue: durableQueue() })).toEqual([])
  })

  it('warns about a memoryStore in production when several instances are detectable', () => {
    vi.stubEnv('NODE_ENV', 'production')
    for (const name of ['NODE_UNIQUE_ID', 'NODE_APP_INSTANCE', 'KUBERNETES_SERVICE_HOST']) vi.stubEnv(name, undefined)
    for (const name of ['AWS_LAMBDA_FUNCTION_NAME', 'K_SERVICE']) vi.stubEnv(name, undefined)
    expect(warned({ store: memoryStore() })).toEqual([])
    vi.stubEnv('NODE_APP_INSTANCE', '0')
    const calls = warned({ store: memoryStore() })
    expect(codes(calls)).toEqual(['memory_store_several_instances'])
    expect(calls[0]?.args[1]).toContain('a PM2 instance: NODE_APP_INSTANCE is set')
    vi.stubEnv('NODE_APP_INSTANCE', undefined)
    vi.stubEnv('KUBERNETES_SERVICE_HOST', '10.0.0.1')
    const store = memoryStore()
    expect(codes(warned({ store }))).toEqual(['memory_store_several_instances'])
    expect(warned({ store })).toEqual([]) // once per store
    vi.stubEnv('NODE_ENV', 'development')
    expect(warned({ store: memoryStore() })).toEqual([])
  })

  it('warns loudly in production on the default store (no store option), with no other variable set, once', () => {
    vi.stubEnv('NODE_ENV', 'production')
    for (const name of ['NODE_UNIQUE_ID', 'NODE_APP_INSTANCE', 'KUBERNETES_SERVICE_HOST']) vi.stubEnv(name, undefined)
    for (const name of ['AWS_LAMBDA_FUNCTION_NAME', 'K_SERVICE']) vi.stubEnv(name, undefined)
    const calls = warned({})
    expect(codes(calls)).toEqual(['memory_store_default_in_production'])
    expect(calls[0]?.args[1]).toMatch(
      /^\[payhooks\] no store option, so NODE_ENV=production runs on the default memoryStore: .*several instances.*run twice.*~3 min, not 72 h.*Fix: pass a shared store \(store: redisStore\(redis\)/,
    )
    vi.stubEnv('KUBERNETES_SERVICE_HOST', '10.0.0.1')
    expect(codes(warned({}))).toEqual(['memory_store_default_in_production']) // the one warning, not two
    vi.stubEnv('NODE_ENV', 'development')
    expect(warned({})).toEqual([])
  })

  it('warns once per type about a handler for an event type with no schema that the spec does not name', () => {
    const { logger, calls } = structured()
    const webhooks = createWebhooks({
      secret,
      logger,
      schemas: { refund_created: v.looseObject({ event_type: v.literal('refund_created'), event_id: v.string() }) },
    })
    webhooks.on('transaction_setled', () => {})
    webhooks.on('transaction_setled', () => {})
    webhooks.on('account_updater_status_changed', () => {})
    for (const type of ['payment_created', 'transaction_settled', 'sale_created_from_batch', 'refund_created']) {
      webhooks.on(type, () => {})
    }
    webhooks.on('toString', () => {})
    expect(calls.map((call) => call.args[0])).toEqual([
      { code: 'unknown_event_type', event_type: 'transaction_setled' },
      { code: 'unknown_event_type', event_type: 'account_updater_status_changed' },
      { code: 'unknown_event_type', event_type: 'toString' },
    ])
    expect(calls[0]?.args[1]).toContain("on('transaction_setled'): no schema")
    expect(calls[0]?.args[1]).toContain("Did you mean 'transaction_settled'?")
    expect(calls[1]?.args[1]).not.toContain('Did you mean')
  })

  it('warns once about a secret with whitespace around it, never showing the secret', async () => {
    const padded = `${secret}\n`
    const calls = warned({ secret: padded })
    expect(codes(calls)).toEqual(['secret_whitespace'])
    expect(calls[0]?.args[1]).toMatch(/^\[payhooks\] the secret has whitespace around it/)
    expect(JSON.stringify(calls)).not.toContain(secret)
    expect(codes(warned({ secret: [secret, ` ${secret}`] }))).toEqual(['secret_whitespace'])
    expect(warned({ secret: [secret, ` ${secret}`] })[0]?.args[1]).toContain('secret #2 of 2')
    expect(warned({ secret })).toEqual([])
  })

  it("warns once about a resolver's padded secret, when it first answers with one", async () => {
    const { logger, calls } = structured()
    let answer = secret
    const webhooks = createWebhooks({ secret: () => answer, logger })
    await deliver(webhooks, sampleEvent('transaction_settled'))
    expect(calls).toEqual([])
    answer = `${secret} `
    await deliver(webhooks, sampleEvent('transaction_settled'))
    await deliver(webhooks, sampleEvent('transaction_settled'))
    const warnings = calls.filter((call) => call.level === 'warn')
    expect(codes(warnings).filter((code) => code !== 'invalid_signature')).toEqual(['secret_whitespace'])
  })

  it('sends warnings to a line logger’s warn, or its error when it has none', () => {
    const withWarn = lines()
    createWebhooks({ secret: `${secret} `, logger: withWarn.logger })
    expect(withWarn.warnings).toEqual([[expect.stringMatching(/^\[payhooks\] the secret has whitespace/)]])
    const errorOnly = lines(false)
    createWebhooks({ secret: `${secret} `, logger: errorOnly.logger })
    expect(errorOnly.errors).toEqual([[expect.stringMatching(/^\[payhooks\] the secret has whitespace/)]])
  })

  it('gives the memoryStore’s own warning structured fields too', () => {
    const { logger, calls } = structured()
    let now = 0
    const store = memoryStore({ maxEntries: 2, logger, now: () => now })
    for (let i = 0; i < 4; i++) {
      const claim = store.claim(`evt_${i}`, 1000)
      if (claim.status === 'claimed') store.complete(`evt_${i}`, claim.token)
      now += 1
    }
    expect(calls.map((call) => call.args[0])).toEqual([{ code: 'memory_store_full', max_entries: 2, window_ms: 1 }])
  })
})
