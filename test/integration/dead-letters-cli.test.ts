// `payhooks dead-letters list|show|replay` as users run them: the built CLI in a child process, reaching the dead
// letters through a module of the user's (test/fixtures/*-module.mjs) on a real Redis.
import { randomUUID } from 'node:crypto'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { bullmqQueue, startWorker } from '@payhooks/bullmq'
import { createWebhooks, type Webhooks } from '@payhooks/core'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) {
  throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
}
const SECRET = 'whsec_dead_letters_cli'
const HOUR = 60 * 60 * 1000
const MODULE = resolve(import.meta.dirname, '../fixtures/dead-letters-module.mjs')
const BULLMQ_MODULE = resolve(import.meta.dirname, '../fixtures/bullmq-dead-letters-module.mjs')
const ROOT_PREFIX = 'payhooks-dead-letters-cli:'

const redis = new Redis(REDIS_URL)
beforeAll(() => assertBuilt())
afterAll(async () => {
  const keys = await redis.keys(`${ROOT_PREFIX}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n')
  expect(lines).toHaveLength(1)
  return lines[0] as string
}

/**
 * A production receiver (built-in schemas, a handler failing for events signed long ago) that parked three
 * letters: a schema mismatch, a handler failure on its last tries, and a schema mismatch whose stored body was
 * altered afterwards. The CLI reaches them through the module, whose receiver has the schema fixed.
 */
async function parkedLetters() {
  const prefix = `${ROOT_PREFIX}${randomUUID()}:`
  const countsKey = `${prefix}counts`
  const deadLetters = redisDeadLetterStore(redis, { ...UNHURRIED, keyPrefix: `${prefix}{dead-letters}:` })
  const webhooks = createWebhooks({
    secret: SECRET,
    store: redisStore(redis, { keyPrefix: `${prefix}store:`, ...UNHURRIED }),
    deadLetters,
    logger: { error() {} },
  })
  webhooks.on('transaction_settled', () => {
    throw new Error('ledger down')
  })
  const deliver = async (event: Record<string, unknown>) => {
    const { body, headers } = await signedDelivery(event, SECRET)
    const answer = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })
    expect(answer.status).toBe(200)
    return body
  }
  const amountAsString = { settlement_amount: '10.30' }
  const schemaBody = await deliver(
    sampleEvent('transaction_settled', { eventId: 'evt_cli_schema', data: amountAsString }),
  )
  await deliver(
    sampleEvent('transaction_settled', {
      eventId: 'evt_cli_handler',
      createdAt: new Date(Date.now() - 71.5 * HOUR).toISOString(),
    }),
  )
  // Parked with its bytes altered as if in the store (a park of other bytes keeps the first ones), under the
  // signature of the original.
  const tampered = await signedDelivery(
    sampleEvent('transaction_settled', { eventId: 'evt_cli_tampered', data: amountAsString }),
    SECRET,
  )
  await deadLetters.park({
    eventId: 'evt_cli_tampered',
    eventType: 'transaction_settled',
    body: new TextEncoder().encode(tampered.body.replace('10.30', '99999.30')),
    headers: { ...tampered.headers },
    code: 'schema_mismatch',
    reason: 'transaction_settled evt_cli_tampered does not match its schema: data.settlement_amount: invalid',
    createdAt: undefined,
    parkedAt: new Date(),
  })

  const env = { REDIS_URL: REDIS_URL as string, SECRET, KEY_PREFIX: prefix, COUNTS_KEY: countsKey }
  return {
    schemaBody,
    cli: (...args: string[]) => runCli(['dead-letters', ...args, '--module', MODULE], { env }),
    runs: async (eventId: string) => Number((await redis.hget(countsKey, eventId)) ?? 0),
  }
}

describe('payhooks dead-letters', () => {
  it('lists the parked letters newest first, as a table or JSON, filtered by code and event type', async () => {
    const { cli } = await parkedLetters()
    const listed = await cli('list')
    expect(listed.stderr).toBe('')
    expect(listed.code).toBe(0)
    const lines = listed.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^EVENT_ID\s+EVENT_TYPE\s+CODE\s+STATUS\s+PARKED_AT\s+CREATED_AT\s+COUNT\s+REASON$/)
    expect(lines.slice(-2)).toEqual(['', '3 of 3 parked dead letters, newest first.'])
    expect(lines.slice(1, -2).map((line) => line.split(/\s+/).slice(0, 4))).toEqual([
      ['evt_cli_tampered', 'transaction_settled', 'schema_mismatch', 'parked'],
      ['evt_cli_handler', 'transaction_settled', 'handler_failed', 'parked'],
      ['evt_cli_schema', 'transaction_settled', 'schema_mismatch', 'parked'],
    ])
    expect(lines[2]).toContain('ledger down')

    const json = await cli('list', '--code', 'handler_failed', '--json')
    expect(json.code).toBe(0)
    const letters = JSON.parse(json.stdout) as Record<string, unknown>[]
    expect(letters).toHaveLength(1)
    expect(letters[0]).toMatchObject({
      event_id: 'evt_cli_handler',
      event_type: 'transaction_settled',
      code: 'handler_failed',
      status: 'parked',
      park_count: 1,
      replayed_at: null,
    })
    expect(Date.now() - Date.parse(letters[0]?.created_at as string)).toBeGreaterThan(71 * HOUR)

    const none = await cli('list', '--event-type', 'transaction_returned')
    expect(none).toMatchObject({ code: 0, stdout: 'No parked dead letters.\n' })
    const bad = await cli('list', '--code', 'boom')
    expect(bad.code).toBe(2)
    expect(oneLine(bad.stderr)).toMatch(
      /^payhooks dead-letters list: --code must be schema_mismatch, handler_failed, stale_event or paused/,
    )
  })

  it('shows one letter with its reason, times, headers and the exact body; an unknown id exits 1', async () => {
    const { cli, schemaBody } = await parkedLetters()
    const shown = await cli('show', 'evt_cli_schema')
    expect(shown.code).toBe(0)
    expect(shown.stdout).toMatch(/^code\s+schema_mismatch$/m)
    expect(shown.stdout).toMatch(
      /^reason\s+transaction_settled evt_cli_schema does not match its schema: data\.settlement_amount/m,
    )
    expect(shown.stdout).toMatch(
      /^headers\s+\{"service-hmac-sha256":"[0-9A-F]{64}","content-type":"application\/json"\}$/m,
    )
    expect(shown.stdout.trimEnd().endsWith(`\n\n${schemaBody}`)).toBe(true)

    const json = JSON.parse((await cli('show', 'evt_cli_schema', '--json')).stdout) as Record<string, string>
    expect(Buffer.from(json.body_base64 as string, 'base64').toString('utf8')).toBe(schemaBody)
    expect(json).toMatchObject({ event_id: 'evt_cli_schema', code: 'schema_mismatch', park_count: 1 })

    const unknown = await cli('show', 'evt_cli_unknown')
    expect(unknown.code).toBe(1)
    expect(oneLine(unknown.stderr)).toBe('payhooks dead-letters show: no dead letter for evt_cli_unknown')
  })

  it('replays a letter once its schema is fixed: the handler runs once, a second replay is a duplicate', async () => {
    const { cli, runs } = await parkedLetters()
    const first = await cli('replay', 'evt_cli_schema')
    expect(first.stderr).toBe('')
    expect(first.code).toBe(0)
    expect(first.stdout).toMatch(/^evt_cli_schema\s+processed$/m)
    expect(await runs('evt_cli_schema')).toBe(1)

    const second = await cli('replay', 'evt_cli_schema', '--json')
    expect(second.code).toBe(0)
    // A duplicate says when it was handled: here, when the first replay marked its letter.
    expect(JSON.parse(second.stdout)).toEqual([
      { event_id: 'evt_cli_schema', status: 'duplicate', handled_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    ])
    expect(await runs('evt_cli_schema')).toBe(1)
    const replayed = await cli('list', '--status', 'replayed', '--json')
    expect((JSON.parse(replayed.stdout) as { event_id: string }[]).map((l) => l.event_id)).toEqual(['evt_cli_schema'])
  })

  it('refuses to replay a letter whose stored body was altered: exit 1, invalid_signature, nothing run', async () => {
    const { cli, runs } = await parkedLetters()
    const replayed = await cli('replay', 'evt_cli_tampered')
    expect(replayed.code).toBe(1)
    expect(replayed.stdout).toMatch(
      /^evt_cli_tampered\s+failed\s+invalid_signature: signature does not match the body$/m,
    )
    expect(await runs('evt_cli_tampered')).toBe(0)
    const shown = await cli('show', 'evt_cli_tampered', '--json')
    expect([shown.code, shown.stderr]).toEqual([0, ''])
    expect((JSON.parse(shown.stdout) as { status: string }).status).toBe('parked')
  })

  it('replays every parked letter matching a filter with --all', async () => {
    const { cli, runs } = await parkedLetters()
    const replayed = await cli('replay', '--all', '--code', 'handler_failed', '--json')
    expect(replayed.code).toBe(0)
    // No progress on stderr with --json.
    expect(replayed.stderr).toBe('')
    expect(JSON.parse(replayed.stdout).outcomes).toEqual([{ event_id: 'evt_cli_handler', status: 'processed' }])
    expect(await runs('evt_cli_handler')).toBe(1)
    expect(await runs('evt_cli_schema')).toBe(0)

    // The rest: one replays, the altered one fails, so the command exits 1.
    const rest = await cli('replay', '--all', '--json')
    expect(rest.code).toBe(1)
    expect(JSON.parse(rest.stdout).outcomes).toEqual([
      { event_id: 'evt_cli_schema', status: 'processed' },
      {
        event_id: 'evt_cli_tampered',
        status: 'failed',
        error: 'invalid_signature',
        message: 'signature does not match the body',
      },
    ])
  })

  it('says how to call it: --module is required, the module must export dead letters, ids or --all', async () => {
    const env = { PATH: process.env.PATH ?? '' }
    const noModule = await runCli(['dead-letters', 'list'], { env })
    expect(noModule.code).toBe(2)
    expect(oneLine(noModule.stderr)).toMatch(
      /^payhooks dead-letters list: --module is required \(or set PAYHOOKS_MODULE\)/,
    )

    const missing = await runCli(['dead-letters', 'list', '--module', './no-such-module.mjs'], { env })
    expect(missing.code).toBe(1)
    expect(oneLine(missing.stderr)).toMatch(/^payhooks dead-letters list: cannot load \.\/no-such-module\.mjs: /)

    // A module without dead letters: @payhooks/testing's own entry.
    const samples = resolve(import.meta.dirname, '../../packages/testing/dist/index.js')
    const wrong = await runCli(['dead-letters', 'list', '--module', samples], { env })
    expect(wrong.code).toBe(2)
    expect(oneLine(wrong.stderr)).toMatch(
      /exports no dead letters: export default the receiver built by createWebhooks/,
    )

    const empty = resolve(import.meta.dirname, '../fixtures/queue-worker.mjs')
    const noIds = await runCli(['dead-letters', 'replay', '--module', empty], { env })
    expect(noIds.code).toBe(2)
    expect(oneLine(noIds.stderr)).toMatch(/^payhooks dead-letters replay: missing <event_id> \(or --all\)/)
  })

  it('says a memory store is not durable, and how to run a TypeScript module', async () => {
    const env = { PATH: process.env.PATH ?? '' }
    const memory = resolve(import.meta.dirname, '../fixtures/memory-dead-letters-module.mjs')
    const listed = await runCli(['dead-letters', 'list', '--module', memory], { env })
    expect([listed.code, listed.stdout]).toEqual([0, 'No parked dead letters.\n'])
    expect(oneLine(listed.stderr)).toMatch(
      /^payhooks dead-letters list: warning: .* keeps its dead letters in memory \(memoryDeadLetterStore\), which is not durable: this process started with none/,
    )

    const dir = await mkdtemp(join(tmpdir(), 'payhooks-ts-module-'))
    try {
      const typescript = join(dir, 'webhooks.ts')
      await writeFile(typescript, 'export const deadLetters: unknown = undefined\n')
      const refused = await runCli(['dead-letters', 'list', '--module', typescript], { env })
      expect(refused.code).toBe(1)
      expect(oneLine(refused.stderr)).toMatch(
        /cannot load .*webhooks\.ts: Unknown file extension "\.ts".*; this Node does not run TypeScript: build the module first and pass its \.js, or run the CLI with tsx loaded \(npm i -D tsx; NODE_OPTIONS='--import tsx' payhooks dead-letters list --module .*webhooks\.ts\)$/,
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  // Several CLI processes, each loading BullMQ and its Redis: on CI's loaded machine they took over 30 s together.
  it("serves BullMQ's dead letters with the same commands: list, show, and replay back to the queue", async () => {
    const id = randomUUID()
    const names = { name: 'cli-dead-letters', prefix: `${ROOT_PREFIX}bull-${id}` }
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null })
    const queue = bullmqQueue({ connection, ...names, attempts: 1 })
    const webhooks = createWebhooks({
      secret: SECRET,
      store: redisStore(connection, { ...UNHURRIED, keyPrefix: `${ROOT_PREFIX}bull-store-${id}:` }),
      queue,
      logger: { error() {} },
    })
    let failing = true
    let runs = 0
    webhooks.on('transaction_settled', () => {
      if (failing) throw new Error('ledger down')
      runs++
    })
    const worker = startWorker(webhooks as Webhooks<unknown>, { connection, ...names })
    const env = { REDIS_URL: REDIS_URL as string, QUEUE_NAME: names.name, QUEUE_PREFIX: names.prefix }
    const cli = (...args: string[]) => runCli(['dead-letters', ...args, '--module', BULLMQ_MODULE], { env })
    try {
      await queue.enqueue(sampleEvent('transaction_settled', { eventId: 'evt_cli_bullmq' }) as never)
      for (let i = 0; i < 500 && !(await queue.deadLetter('evt_cli_bullmq')); i++) {
        await new Promise((r) => setTimeout(r, 20))
      }
      const listed = await cli('list')
      expect(listed.code).toBe(0)
      expect(listed.stdout).toMatch(
        /^evt_cli_bullmq\s+transaction_settled\s+handler_failed\s+parked\s+\S+\s+\S+\s+1\s+.*ledger down$/m,
      )
      const shown = JSON.parse((await cli('show', 'evt_cli_bullmq', '--json')).stdout) as Record<string, string>
      expect(JSON.parse(shown.body as string)).toMatchObject({ event_id: 'evt_cli_bullmq' })

      failing = false
      const replayed = await cli('replay', 'evt_cli_bullmq')
      expect(replayed.code).toBe(0)
      expect(replayed.stdout).toMatch(/^evt_cli_bullmq\s+queued$/m)
      for (let i = 0; i < 500 && runs === 0; i++) await new Promise((r) => setTimeout(r, 20))
      expect(runs).toBe(1)
      expect((await cli('list')).stdout).toBe('No parked dead letters.\n')
    } finally {
      await worker.close()
      await queue.close()
      connection.disconnect()
    }
  }, 120_000)
})
