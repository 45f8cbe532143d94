// `payhooks pause|resume|paused` as operators run them: the built CLI in a child process, reaching the pauses through
// the user's module (test/fixtures/pause-module.mjs) on a real Redis, beside a live receiver sharing its stores.
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { createWebhooks } from '@payhooks/core'
import { redisDeadLetterStore, redisPauseStore, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, expect, it, vi } from 'vitest'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
const SECRET = 'whsec_pause_cli'
const MODULE = resolve(import.meta.dirname, '../fixtures/pause-module.mjs')
const ROOT_PREFIX = 'payhooks-pause-cli:'
const redis = new Redis(REDIS_URL)

beforeAll(() => assertBuilt())
afterAll(async () => {
  const keys = await redis.keys(`${ROOT_PREFIX}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

it('pauses a type on the live receiver, lists it, and resumes it, replaying what was parked once', async () => {
  const prefix = `${ROOT_PREFIX}${randomUUID()}:`
  const countsKey = `${prefix}counts`
  const env = { REDIS_URL: REDIS_URL as string, SECRET, KEY_PREFIX: prefix, COUNTS_KEY: countsKey }
  const live = createWebhooks({
    secret: SECRET,
    store: redisStore(redis, { keyPrefix: `${prefix}store:`, ...UNHURRIED }),
    deadLetters: redisDeadLetterStore(redis, { keyPrefix: `${prefix}{dead-letters}:`, ...UNHURRIED }),
    pauses: redisPauseStore(redis, { keyPrefix: prefix, ...UNHURRIED }),
    checkAtStart: false,
  })
  live.onAny(async (event) => void (await redis.hincrby(countsKey, event.event_id, 1)))
  const send = async (eventId: string) => {
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId }), SECRET)
    const answer = await live.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })
    return JSON.parse(answer.body) as { status?: string }
  }
  const cli = (...args: string[]) => runCli([...args, '--module', MODULE], { env })

  const paused = await cli('pause', 'transaction_settled', '--reason', 'ledger migration')
  expect(paused.stderr).toBe('')
  expect(paused.stdout).toMatch(/^Paused transaction_settled since \S+ \(ledger migration\): every receiver/)
  expect(paused.code).toBe(0)
  // The live receiver reads the pauses every second: it parks once its copy has the pause (its health says so),
  // however late a loaded machine's timer and read came (a fixed 2 s wait was twice the period).
  const pausedHere = async () => (await live.health()).checks.some((check) => check.name === 'paused')
  await vi.waitFor(async () => expect(await pausedHere()).toBe(true), { timeout: 20_000, interval: 50 })
  expect((await send('evt_cli_paused')).status).toBe('parked')

  const listed = await cli('paused', '--json')
  expect(JSON.parse(listed.stdout)).toMatchObject({
    paused: [{ event_type: 'transaction_settled', reason: 'ledger migration', by: 'cli' }],
  })
  expect((await cli('paused')).stdout).toMatch(/^transaction_settled {2}paused since \S+ by cli: ledger migration\n$/)

  const resumed = await cli('resume', 'transaction_settled', '--json')
  expect(resumed.code).toBe(0)
  expect(JSON.parse(resumed.stdout)).toMatchObject({ resumed: true, replay: { tried: 1, processed: 1, failed: 0 } })
  expect(await redis.hgetall(countsKey)).toEqual({ evt_cli_paused: '1' })
  expect((await cli('paused')).stdout).toBe('Nothing is paused.\n')
  // The live receiver runs the type again, once its copy has the pause gone.
  await vi.waitFor(async () => expect(await pausedHere()).toBe(false), { timeout: 20_000, interval: 50 })
  expect((await send('evt_cli_after')).status).toBe('processed')
  expect(await redis.hget(countsKey, 'evt_cli_after')).toBe('1')
  await live.close()
}, 120_000)
