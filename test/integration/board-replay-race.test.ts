// Replay all from two consoles at once, in a real headless Chromium, over 1,000 letters on Redis (10% of whose
// handlers keep failing) while a third console deletes some: every letter is tried once, exactly the failing ones
// stay parked, and each console's report adds up to the store.
import { randomUUID } from 'node:crypto'
import { createBoard } from '@payhooks/board'
import { expressBoard } from '@payhooks/board/express'
import { redisDeadLetterStore } from '@payhooks/redis'
import express from 'express'
import { Redis } from 'ioredis'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { listen } from '../fixtures/apps.js'
import { boardReceiver, parkSigned } from '../fixtures/board.js'
import { launchChromium } from '../fixtures/chromium.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test`')
const WAIT = { timeout: 60_000 } // a ceiling: tens of seconds only with two whole test runs side by side
const LETTERS = 1000
const id = (i: number) => `evt_race_${String(i).padStart(4, '0')}`

let browser: Browser
const closers: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  browser = await launchChromium()
}, 120_000)

afterAll(async () => {
  await browser?.close()
  for (const close of closers.reverse()) await close()
})

async function console_(url: string): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 860 },
    extraHTTPHeaders: { 'x-ops': 'y' },
  })
  closers.push(() => context.close())
  context.setDefaultTimeout(WAIT.timeout)
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(url)
  await page.locator('#letters tbody tr').first().waitFor(WAIT)
  return { page, errors }
}

it('two consoles replay all at once while a third deletes: each letter tried once, the failing ones parked, reports true', {
  timeout: 300_000,
}, async () => {
  const redis = new Redis(REDIS_URL)
  const prefix = `{race-${randomUUID()}}:`
  closers.push(async () => {
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length > 0) await redis.del(...keys)
    redis.disconnect()
  })
  const store = redisDeadLetterStore(redis, { keyPrefix: prefix, ...UNHURRIED })
  await store.init?.()
  const { webhooks, runs } = boardReceiver(store)
  const failing = new Set(Array.from({ length: LETTERS / 10 }, (_, i) => id(i * 10 + 7)))
  // The walk waits at letter 400 until the third console has deleted, so its deletions of letters not reached yet
  // (500 and the newest) come before the walk, whatever the machine's load: the race under test is the two walks'.
  let openGate = () => {}
  const gate = new Promise<void>((resolve) => {
    openGate = resolve
  })
  webhooks.onAny(async (event) => {
    if (Number(event.event_id.slice(-4)) >= 400) await gate
    await new Promise((resolve) => setTimeout(resolve, 1))
    if (failing.has(event.event_id)) throw new Error('ledger still down')
  })
  const start = Date.now() - 3_600_000
  for (let i = 0; i < LETTERS; i += 50) {
    await Promise.all(
      Array.from({ length: 50 }, (_, j) => parkSigned(store, id(i + j), { parkedAt: new Date(start + (i + j) * 100) })),
    )
  }
  const app = express()
  const authorize = (req: express.Request) => req.get('x-ops') === 'y'
  app.use('/ops', expressBoard(createBoard({ webhooks, authorize, logger: { warn() {}, info() {} } })))
  const served = await listen(app as unknown as Parameters<typeof listen>[0])
  closers.push(served.close)
  const url = `${served.url}/ops/`

  const [a, b, c] = await Promise.all([console_(url), console_(url), console_(url)])
  for (const { page } of [a, b]) {
    await page.locator('#replay-matching').click()
    await page.locator('#confirm:not([hidden])').waitFor(WAIT)
    expect(await page.locator('#confirm').textContent()).toContain(`Replay all ${LETTERS} parked letter(s)`)
  }
  await Promise.all([a.page.locator('#confirm-yes').click(), b.page.locator('#confirm-yes').click()])

  // The third console deletes, one by one from the page, failing letters the walk has passed (tried, left parked),
  // then the newest letters and one in the middle, not reached yet (the walk waits at 400 meanwhile).
  const passed = [id(7), id(17), id(27), id(37), id(47), id(57)]
  // Each run has at most 4 letters in flight: once 90 started, 57's replay was over in the run that tried it.
  while (!runs.has(id(90))) await new Promise((resolve) => setTimeout(resolve, 10))
  const deleted = [...passed, id(999), id(998), id(997), id(987), id(500)]
  for (const eventId of deleted) {
    await c.page.goto(`${url}#/letter/${encodeURIComponent(eventId)}`)
    await c.page.locator(`#letter[data-event-id="${eventId}"]`).waitFor(WAIT)
    await c.page.locator('#delete').click()
    await c.page.locator('#confirm-yes').click()
    await c.page.locator('#notice[data-kind="ok"]').waitFor(WAIT)
  }
  expect(deleted.filter((eventId) => runs.has(eventId) && !passed.includes(eventId))).toEqual([])
  openGate()

  const reports: string[] = []
  for (const { page } of [a, b]) {
    await page.locator('#notice:not([hidden])').waitFor({ timeout: 90_000 })
    reports.push((await page.locator('#notice').textContent()) ?? '')
  }
  // Every letter still there when the walk reached it was tried, and none twice.
  for (let i = 0; i < LETTERS; i++) {
    if (!deleted.includes(id(i))) expect(runs.get(id(i)), id(i)).toBe(1)
    else expect(runs.get(id(i)) ?? 0).toBeLessThanOrEqual(1)
  }
  const parked = (await store.list({ limit: 1000 })).map((letter) => letter.eventId).sort()
  expect(parked).toEqual([...failing].filter((eventId) => !deleted.includes(eventId)).sort())
  const kept = (eventId: string) => !deleted.includes(eventId)
  const handled = [...runs.keys()].filter((eventId) => eventId.startsWith('evt_race_') && !failing.has(eventId))
  expect(await store.count?.({ status: 'replayed' })).toBe(handled.filter(kept).length)
  // Each console says what it did; together, what the store shows.
  const figure = (report: string, what: string) => Number(new RegExp(`(\\d+) ${what}`).exec(report)?.[1] ?? 0)
  const processed = reports.map((report) => figure(report, 'processed'))
  const failed = reports.map((report) => figure(report, 'failed'))
  for (const report of reports) expect(report).toMatch(/^Replay: \d+ processed.* Another console replayed the same/)
  expect(processed.every((n) => n > 0)).toBe(true)
  const [processedA = 0, processedB = 0] = processed
  const [failedA = 0, failedB = 0] = failed
  expect(processedA + processedB).toBe(handled.length)
  expect(failedA + failedB).toBe([...failing].filter((eventId) => runs.get(eventId) === 1).length)
  expect(failedA + failedB).toBeGreaterThanOrEqual(parked.length)
  expect(a.errors.concat(b.errors, c.errors)).toEqual([])
})
