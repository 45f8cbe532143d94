// A schema refusal names the field at fault and what was expected there, never the value refused: in the error's
// message, issues and cause chain, the log lines, the dead letter's reason and what the board and the CLI show of
// it. The value stays in the body of the dead letter (it is the event). Built-in schemas and the user's alike.
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { createBoard } from '@payhooks/board'
import { createWebhooks, type LogFields, type WebhookError } from '@payhooks/core'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
const SECRET = 'whsec_schema_values'
const VALUE = 'SECRET-CARD-4111111111111111'
const ROOT_PREFIX = 'payhooks-schema-values:'
const MODULE = resolve(import.meta.dirname, '../fixtures/dead-letters-module.mjs')

const redis = new Redis(REDIS_URL)
beforeAll(() => assertBuilt())
afterAll(async () => {
  const keys = await redis.keys(`${ROOT_PREFIX}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

/** A user's schema of each kind valibot reports differently, one with a custom message quoting the input. */
const cardSchema = v.looseObject({
  event_type: v.literal('card_checked'),
  event_id: v.string(),
  data: v.looseObject({
    pan: v.pipe(
      v.string(),
      v.check(
        () => false,
        (issue) => `card ${String(issue.input)} refused`,
      ),
    ),
    email: v.pipe(v.string(), v.email()),
    brand: v.picklist(['visa', 'mastercard']),
    last4: v.pipe(v.string(), v.length(4)),
    holder: v.union([v.null(), v.number()]),
    amount: v.number(),
    required: v.string(),
  }),
})

function* causes(error: unknown): Generator<unknown> {
  for (let at = error; at !== undefined && at !== null; at = (at as { cause?: unknown }).cause) yield at
}

describe('schema refusals carry no value of the body', () => {
  it('built-in and user schemas: message, issues, causes, log lines, reason, board and CLI name paths only', async () => {
    const prefix = `${ROOT_PREFIX}${randomUUID()}:`
    const deadLetters = redisDeadLetterStore(redis, { ...UNHURRIED, keyPrefix: `${prefix}{dead-letters}:` })
    const lines: string[] = []
    const record = (fields: LogFields, message: string) => lines.push(`${JSON.stringify(fields)} ${message}`)
    // Logged (no onError listener) and parked...
    const webhooks = createWebhooks({
      secret: SECRET,
      store: redisStore(redis, { keyPrefix: `${prefix}store:`, ...UNHURRIED }),
      deadLetters,
      schemas: { card_checked: cardSchema },
      logger: { error: record, warn: record, info: record },
      checkAtStart: false,
    })
    // ...and, on a receiver of their own, handed to onError.
    const errors: WebhookError[] = []
    const reporting = createWebhooks({ secret: SECRET, schemas: { card_checked: cardSchema } })
    reporting.onError((error) => {
      errors.push(error)
    })
    const deliver = async (event: Record<string, unknown>) => {
      const { body, headers } = await signedDelivery(event, SECRET)
      const delivery = { method: 'POST', body, getHeader: (name: string) => headers[name as never] }
      expect((await reporting.receive(delivery)).status).toBe(422)
      return webhooks.receive(delivery)
    }

    const settled = sampleEvent('transaction_settled', { eventId: 'evt_values_builtin' })
    const data = settled.data as Record<string, unknown>
    const builtin = await deliver({
      ...settled,
      client_id: { card: VALUE },
      data: { ...data, settlement_amount: VALUE, transaction_id: [VALUE], settlement_code: undefined },
    })
    expect(builtin.status).toBe(200)
    expect(JSON.parse(builtin.body)).toMatchObject({ status: 'parked' })
    const user = await deliver({
      event_type: 'card_checked',
      event_id: 'evt_values_user',
      created_at: new Date().toISOString(),
      data: { pan: VALUE, email: VALUE, brand: VALUE, last4: VALUE, holder: VALUE, amount: VALUE },
    })
    expect(user.status).toBe(200)

    const refusals = errors.filter((error) => error.code === 'schema_mismatch')
    expect(refusals).toHaveLength(2)
    const [builtinError, userError] = refusals as (WebhookError & { issues: { path: string; message: string }[] })[]
    expect(builtinError?.issues).toEqual([
      { path: 'client_id', message: 'failed custom' },
      { path: 'data.transaction_id', message: 'expected string' },
      { path: 'data.settlement_code', message: 'missing' },
      { path: 'data.settlement_amount', message: 'expected number' },
    ])
    expect(userError?.issues).toEqual([
      { path: 'data.pan', message: 'failed check' },
      { path: 'data.email', message: 'failed email' },
      { path: 'data.brand', message: 'expected ("visa" | "mastercard")' },
      { path: 'data.last4', message: 'failed length, expected 4' },
      { path: 'data.holder', message: 'expected (null | number)' },
      { path: 'data.amount', message: 'expected number' },
      { path: 'data.required', message: 'missing' },
    ])
    expect(userError?.message).toBe(
      'card_checked evt_values_user does not match its schema: data.pan: failed check; data.email: failed email; ' +
        'data.brand: expected ("visa" | "mastercard"); data.last4: failed length, expected 4; ' +
        'data.holder: expected (null | number); data.amount: expected number; data.required: missing',
    )
    for (const error of refusals) {
      for (const link of causes(error)) {
        expect(String((link as Error).message ?? link)).not.toContain(VALUE)
        expect(String(link)).not.toContain(VALUE)
      }
      expect(JSON.stringify((error as { issues?: unknown }).issues)).not.toContain(VALUE)
    }
    expect(lines.filter((line) => line.includes('schema_mismatch')).length).toBeGreaterThanOrEqual(2)
    for (const line of lines) expect(line).not.toContain('4111111111111111')

    // The dead letters keep the body, and a reason without the value.
    for (const id of ['evt_values_builtin', 'evt_values_user']) {
      const letter = await deadLetters.get(id)
      expect(letter?.code).toBe('schema_mismatch')
      expect(letter?.reason).toMatch(/does not match its schema: [a-z_.]+: (expected|missing|failed)/)
      expect(letter?.reason).not.toContain(VALUE)
      expect(new TextDecoder().decode(letter?.body)).toContain(VALUE)
    }

    const board = createBoard({ webhooks, authorize: () => true })
    const listed = await board.handle({
      method: 'GET',
      path: '/api/dead-letters',
      base: '/admin/payhooks',
      query: new URLSearchParams(),
      header: (name) => (name === 'host' ? 'ops.example.test' : undefined),
      body: async () => '',
      native: {},
    })
    expect(listed.status).toBe(200)
    expect(String(listed.body)).toContain('does not match its schema')
    expect(String(listed.body)).not.toContain(VALUE)

    const env = { REDIS_URL: REDIS_URL as string, SECRET, KEY_PREFIX: prefix, COUNTS_KEY: `${prefix}counts` }
    for (const args of [['list'], ['list', '--json']]) {
      const cli = await runCli(['dead-letters', ...args, '--module', MODULE], { env })
      expect(cli.code).toBe(0)
      expect(cli.stdout).toContain('evt_values_user')
      expect(cli.stdout + cli.stderr).not.toContain(VALUE)
    }
    const shown = await runCli(['dead-letters', 'show', 'evt_values_builtin', '--module', MODULE], { env })
    const reason = shown.stdout.split('\n').find((line) => line.startsWith('reason'))
    expect(reason).toContain('data.settlement_amount: expected number')
    expect(reason).not.toContain(VALUE)
  })
})
