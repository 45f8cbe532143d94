// `payhooks dead-letters count|list|replay --all` at volume and by time window, as a new user tries them: the built CLI
// in a child process, reaching a receiver's dead letters on a real Redis through test/fixtures/dead-letters-module.mjs.
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { createWebhooks } from '@payhooks/core'
import { redisDeadLetterStore, redisStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test` (node scripts/test.mjs)')
const SECRET = 'whsec_dead_letters_cli_windows'
const MODULE = resolve(import.meta.dirname, '../fixtures/dead-letters-module.mjs')
const ROOT_PREFIX = 'payhooks-dead-letters-cli-windows:'
const OUTAGE = Date.parse('2026-11-28T01:30:00Z')
const HALF_HOUR = 30 * 60_000

const redis = new Redis(REDIS_URL)
beforeAll(() => assertBuilt())
afterAll(async () => {
  const keys = await redis.keys(`${ROOT_PREFIX}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

/**
 * Seven events of an outage, created half an hour apart from 01:30Z (evt_win_0 to evt_win_6), parked a second
 * apart in that order; and two handled by a delivery before they were parked all the same: evt_win_done, created at
 * 03:10Z and parked before the others, and evt_win_late, created at 05:00Z and parked after them.
 */
async function outage() {
  const prefix = `${ROOT_PREFIX}${randomUUID()}:`
  const countsKey = `${prefix}counts`
  const letters = redisDeadLetterStore(redis, { ...UNHURRIED, keyPrefix: `${prefix}{dead-letters}:` })
  const park = async (eventId: string, createdAt: number, parkedAt: number) => {
    const event = sampleEvent('transaction_settled', { eventId, createdAt: new Date(createdAt).toISOString() })
    const { body, headers } = await signedDelivery(event, SECRET)
    await letters.park({
      eventId,
      eventType: 'transaction_settled',
      body: new TextEncoder().encode(body),
      headers,
      code: 'handler_failed',
      reason: 'ledger down',
      createdAt: new Date(createdAt),
      parkedAt: new Date(parkedAt),
    })
    return body
  }
  const now = Date.now() - 60_000
  const parkedAt: number[] = []
  for (let i = 0; i < 7; i++) {
    parkedAt.push(now + i * 1000)
    await park(`evt_win_${i}`, OUTAGE + i * HALF_HOUR, now + i * 1000)
  }
  // Handled by a delivery on the same dedupe store the module's receiver uses, then parked anyway: one in the
  // created window (parked first), one after it (parked last).
  const receiver = createWebhooks({
    secret: SECRET,
    store: redisStore(redis, { ...UNHURRIED, keyPrefix: `${prefix}store:` }),
  })
  receiver.onAny(() => {})
  for (const [eventId, createdAt, at] of [
    ['evt_win_done', OUTAGE + 100 * 60_000, now - 1000],
    ['evt_win_late', OUTAGE + 7 * HALF_HOUR, now + 7000],
  ] as const) {
    const body = await park(eventId, createdAt, at)
    const { headers } = await signedDelivery(JSON.parse(body), SECRET)
    // Retried as the service would: a fresh store's first calls (its scripts loaded) may take past its 1 s
    // commandTimeoutMs on a loaded machine, and that delivery is answered 503.
    await vi.waitFor(
      async () => {
        const answer = await receiver.receive({ method: 'POST', body, getHeader: (name) => headers[name as never] })
        expect(answer.status).toBe(200)
      },
      { timeout: 60_000, interval: 500 },
    )
  }
  await receiver.close()

  const env = { REDIS_URL: REDIS_URL as string, SECRET, KEY_PREFIX: prefix, COUNTS_KEY: countsKey }
  return {
    parkedAt,
    cli: (...args: string[]) => runCli(['dead-letters', ...args, '--module', MODULE], { env }),
    runs: async () => Object.values(await redis.hgetall(countsKey)).reduce((sum, n) => sum + Number(n), 0),
  }
}

const WINDOW = ['--created-after', '2026-11-28T02:00Z', '--created-before', '2026-11-28T04:00Z']

describe('payhooks dead-letters at volume, by time window', () => {
  it('counts the letters matching the filters, in words or JSON, without reading them', async () => {
    const { cli } = await outage()
    expect(await cli('count')).toMatchObject({ code: 0, stdout: '9 parked dead letters match.\n', stderr: '' })
    const json = await cli('count', ...WINDOW, '--json')
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual({
      count: 5,
      status: 'parked',
      filter: { created_after: '2026-11-28T02:00:00.000Z', created_before: '2026-11-28T04:00:00.000Z' },
    })
    expect((await cli('count', '--status', 'replayed')).stdout).toBe('0 replayed dead letters match.\n')
    expect((await cli('count', '--parked-after', '1h', '--created-before', '2026-11-28T02:00Z')).stdout).toBe(
      '1 parked dead letter matches.\n',
    )
  })

  it('lists a page and says how many match in all and how to see the next page', async () => {
    const { cli } = await outage()
    const first = await cli('list', ...WINDOW, '--limit', '2')
    expect(first.code).toBe(0)
    const ids = (stdout: string) =>
      stdout
        .split('\n')
        .filter((line) => line.startsWith('evt_'))
        .map((row) => row.split(/\s+/)[0])
    expect(ids(first.stdout)).toEqual(['evt_win_4', 'evt_win_3'])
    const footer = first.stdout.trimEnd().split('\n').at(-1) as string
    const next = /^2 of 5 parked dead letters, newest first\. Next page: --after (\S+)$/.exec(footer)
    expect(next, footer).not.toBeNull()
    const second = await cli('list', ...WINDOW, '--limit', '2', '--after', next?.[1] as string)
    expect(ids(second.stdout)).toEqual(['evt_win_2', 'evt_win_1'])
    const again = /\n2 more of 5 parked dead letters, newest first\. Next page: --after (\S+)\n$/.exec(second.stdout)
    expect(again, second.stdout).not.toBeNull()
    const last = await cli('list', ...WINDOW, '--limit', '2', '--after', again?.[1] as string)
    expect(ids(last.stdout)).toEqual(['evt_win_done'])
    expect(last.stdout).toMatch(/\n1 more of 5 parked dead letters, newest first\.\n$/)
    expect(last.stdout).toMatch(
      /^evt_win_done\s+transaction_settled\s+handler_failed\s+parked\s+\S+\s+2026-11-28T03:10:00\.000Z\s+1\s+ledger down$/m,
    )
    const all = await cli('list', ...WINDOW)
    expect(all.stdout.trimEnd().split('\n').at(-1)).toBe('5 of 5 parked dead letters, newest first.')
  })

  it('replays by window: --dry-run prints the count and runs nothing; then progress on stderr and the report', async () => {
    const { cli, runs, parkedAt } = await outage()
    const dry = await cli('replay', '--all', ...WINDOW, '--dry-run')
    expect(dry).toMatchObject({
      code: 0,
      stderr: '',
      stdout: '5 parked dead letters match: replay --all would try them, oldest first. Nothing replayed (--dry-run).\n',
    })
    expect(JSON.parse((await cli('replay', '--all', ...WINDOW, '--dry-run', '--json')).stdout)).toEqual({
      dry_run: true,
      count: 5,
      filter: { created_after: '2026-11-28T02:00:00.000Z', created_before: '2026-11-28T04:00:00.000Z' },
    })
    expect(await runs()).toBe(0)

    const replayed = await cli('replay', '--all', ...WINDOW)
    expect(replayed.code).toBe(0)
    expect(replayed.stderr).toBe(
      [
        'payhooks dead-letters replay: replaying 5 letters, oldest first',
        'payhooks dead-letters replay: 5 of 5 tried: 4 processed, 1 duplicate',
        '',
      ].join('\n'),
    )
    const report = replayed.stdout.trimEnd().split('\n')
    expect(report[0]).toBe('Replay of all matching done:')
    expect(report.slice(1).map((line) => line.trim().split(/\s{2,}/))).toEqual([
      ['tried', '5 of 5'],
      ['processed', '4'],
      [
        'duplicate',
        '1: 1 handled before, at a time no record keeps (only the done marker says so; with a journal on the receiver, createWebhooks({ journal }), the run tells before from meanwhile)',
      ],
      ['failed', '0'],
      ['gone', '0'],
      ['remaining', '0'],
    ])
    expect(await runs()).toBe(4)

    // By parked time, as JSON: the report's figures and every outcome, no progress.
    const since = new Date(parkedAt[5] as number).toISOString()
    const json = await cli('replay', '--all', '--parked-after', since, '--json')
    expect(json).toMatchObject({ code: 0, stderr: '' })
    expect(JSON.parse(json.stdout)).toEqual({
      report: {
        tried: 3,
        processed: 2,
        duplicate: 1,
        duplicate_meanwhile: 0,
        duplicate_before: 0,
        duplicate_undated: 1,
        queued: 0,
        in_progress: 0,
        failed: 0,
        not_found: 0,
        gone: 0,
        remaining: 0,
        total: 3,
        done: true,
      },
      outcomes: [
        { event_id: 'evt_win_5', status: 'processed' },
        { event_id: 'evt_win_6', status: 'processed' },
        { event_id: 'evt_win_late', status: 'duplicate' },
      ],
    })
    expect(await runs()).toBe(6)
    expect((await cli('count')).stdout).toBe('1 parked dead letter matches.\n')
  })

  it('refuses a time it cannot read, or one without a zone, and a window that ends before it starts', async () => {
    const { cli } = await outage()
    for (const time of ['yesterday', '2026-11-28T02:00']) {
      const refused = await cli('count', '--created-after', time)
      expect(refused.code).toBe(2)
      expect(refused.stderr).toBe(
        "payhooks dead-letters count: --created-after must be an ISO time with a zone (2026-11-28T02:00Z), a date, or a span (6h, 3d); see 'payhooks dead-letters count --help'\n",
      )
    }
    const backwards = await cli('replay', '--all', '--parked-after', '1h', '--parked-before', '2h')
    expect(backwards.code).toBe(2)
    expect(backwards.stderr).toMatch(
      /^payhooks dead-letters replay: --parked-after must be earlier than --parked-before;/,
    )
    const idsWithWindow = await cli('replay', 'evt_win_0', '--created-after', '1d')
    expect(idsWithWindow.code).toBe(2)
    expect(idsWithWindow.stderr).toMatch(/--event-type, --code and the time windows go with --all/)
    const dryIds = await cli('replay', 'evt_win_0', '--dry-run')
    expect(dryIds.stderr).toMatch(/--dry-run goes with --all/)
  })
})
