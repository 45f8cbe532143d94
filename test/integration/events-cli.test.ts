// `payhooks events show|list` as users run them: the built CLI in a child process, reading the Redis journal two
// receivers wrote, through a module of the user's (test/fixtures/journal-module.mjs).
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { createWebhooks, memoryStore } from '@payhooks/core'
import { redisJournal } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
const SECRET = 'whsec_events_cli'
const MODULE = resolve(import.meta.dirname, '../fixtures/journal-module.mjs')
const PREFIX = `payhooks-events-cli:${randomUUID()}:`
const redis = new Redis(REDIS_URL)
const failed = sampleEvent('transaction_settled')
const fine = sampleEvent('transaction_returned')

beforeAll(async () => {
  assertBuilt()
  const store = memoryStore()
  const receivers = ['web-1', 'web-2'].map((instance) =>
    createWebhooks({
      secret: SECRET,
      store,
      journal: redisJournal(redis, { ...UNHURRIED, keyPrefix: PREFIX }),
      instance,
      checkAtStart: false,
      logger: { error() {} },
    }),
  )
  const [one, two] = receivers as [(typeof receivers)[0], (typeof receivers)[0]]
  one.on('transaction_settled', () => {
    throw new Error('ledger down')
  })
  two.onAny(() => {})
  const deliver = async (webhooks: typeof one, event: object) => {
    const { body, headers } = await signedDelivery(event, SECRET)
    return (await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })).status
  }
  expect(await deliver(one, failed)).toBe(500)
  await new Promise((r) => setTimeout(r, 2))
  expect(await deliver(two, failed)).toBe(200)
  expect(await deliver(two, fine)).toBe(200)
  await Promise.all(receivers.map((webhooks) => webhooks.close()))
  // What an instance writes once its journal takes writes again after its buffer was full: 12 answers dropped.
  await redisJournal(redis, { ...UNHURRIED, keyPrefix: PREFIX }).write([
    {
      id: 'gap00000001',
      at: Date.now() - 2 * 3_600_000,
      eventId: '',
      eventType: '',
      createdAt: null,
      status: 0,
      outcome: 'journal_gap',
      instance: 'web-1',
      durationMs: 30_000,
      secretIndex: 0,
      copies: 12,
    },
  ])
})

afterAll(async () => {
  const keys = await redis.keys(`${PREFIX}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

const env = { REDIS_URL: REDIS_URL as string, SECRET, KEY_PREFIX: PREFIX }

describe('payhooks events', () => {
  it('show: every answer of an event, with its instance, in order, and when it was handled', async () => {
    const { code, stdout, stderr } = await runCli(['events', 'show', failed.event_id as string, '--module', MODULE], {
      env,
    })
    expect(stderr).toBe('')
    expect(code).toBe(0)
    const lines = stdout.trim().split('\n')
    expect(lines[0]).toMatch(new RegExp(`^event_id\\s+${failed.event_id}$`))
    expect(stdout).toMatch(/handled_at\s+\d{4}-\d\d-\d\dT/)
    const rows = lines.slice(lines.findIndex((line) => line.startsWith('AT')) + 1)
    expect(rows.map((row) => row.split(/\s+/).slice(1, 4))).toEqual([
      ['500', 'handler_failed', 'web-1'],
      ['200', 'processed', 'web-2'],
    ])
  })

  it('show: exits 1 for an event never answered', async () => {
    const { code, stderr } = await runCli(['events', 'show', 'evt_never', '--module', MODULE], { env })
    expect(code).toBe(1)
    expect(stderr).toMatch(
      /^payhooks events show: no answer journaled for evt_never \(kept 168 hours\): the service did not reach you within that time, the request was not signed with your secret, or the id differs \(a parked event: payhooks dead-letters show evt_never\); /,
    )
    expect(stderr).toContain('no answer journaled for evt_never')
    // Not only "never answered": answers were dropped then, and it may be one of them.
    expect(stderr).toContain('answers were dropped (it may be among them): 12 answers dropped by web-1 from ')
  })

  it('list: says how long answers are kept, and what to try when none match', async () => {
    const none = await runCli(['events', 'list', '--outcome', 'stale_event', '--module', MODULE], { env })
    expect(none).toMatchObject({
      code: 0,
      stdout:
        'No answers journaled match (kept 168 hours): widen --since/--until, or drop --outcome and --event-type (an outcome is a word such as handler_failed, processed, duplicate, parked).\n',
    })
    const some = await runCli(['events', 'list', '--module', MODULE], { env })
    expect(some.stdout.trimEnd().split('\n').at(-1)).toBe(
      'Answers of every instance sharing the journal, newest first (kept 168 hours).',
    )
  })

  it('list --outcome handler_failed --since 1h: the failures of the last hour, as JSON too', async () => {
    const text = await runCli(['events', 'list', '--outcome', 'handler_failed', '--since', '1h', '--module', MODULE], {
      env,
    })
    expect(text.code).toBe(0)
    const rows = text.stdout.trim().split('\n').slice(1, -2)
    expect(rows.map((row) => row.split(/\s+/).slice(1, 6))).toEqual([
      [failed.event_id, 'transaction_settled', '500', 'handler_failed', 'web-1'],
    ])
    const json = await runCli(['events', 'list', '--since', '1h', '--limit', '2', '--json', '--module', MODULE], {
      env,
    })
    const page = JSON.parse(json.stdout) as { answers: { event_id: string; outcome: string }[]; cursor: string | null }
    expect(page.answers.map((a) => [a.event_id, a.outcome])).toEqual([
      [fine.event_id, 'processed'],
      [failed.event_id, 'processed'],
    ])
    const next = await runCli(['events', 'list', '--cursor', page.cursor as string, '--json', '--module', MODULE], {
      env,
    })
    expect(JSON.parse(next.stdout).answers.map((a: { outcome: string }) => a.outcome)).toEqual([
      'handler_failed',
      'journal_gap',
    ])
  })

  it('list: refuses a --since it cannot read', async () => {
    const { code, stderr } = await runCli(['events', 'list', '--since', 'yesterday', '--module', MODULE], { env })
    expect(code).toBe(2)
    expect(stderr).toContain('--since must be a span such as 1h')
  })
})
