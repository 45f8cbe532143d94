// The board's letters page in Chromium, filtered by the events' created_at (the events of an outage, whenever they
// were parked), then "Replay all matching" on that window: a receiver on Express with a Redis dead-letter store.
import { randomUUID } from 'node:crypto'
import { createBoard } from '@payhooks/board'
import { expressBoard } from '@payhooks/board/express'
import { redisDeadLetterStore } from '@payhooks/redis'
import express from 'express'
import { Redis } from 'ioredis'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listen } from '../fixtures/apps.js'
import { boardReceiver, parkSigned } from '../fixtures/board.js'
import { launchChromium } from '../fixtures/chromium.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const WAIT = { timeout: 15_000 }
const SLOW = 90_000
const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test`')

let browser: Browser
const closers: (() => Promise<unknown>)[] = []
beforeAll(async () => {
  browser = await launchChromium()
}, SLOW)
afterAll(async () => {
  await browser?.close()
  for (const close of closers.reverse()) await close()
})

describe('board letters page: a created_at window', () => {
  it('filters by when the events were created and replays all matching that window only', {
    timeout: SLOW,
  }, async () => {
    const redis = new Redis(REDIS_URL)
    closers.push(() => redis.quit())
    const store = redisDeadLetterStore(redis, { ...UNHURRIED, keyPrefix: `{board-window-${randomUUID()}}:` })
    const { webhooks, runs } = boardReceiver(store)
    const app = express()
    app.use('/ops', expressBoard(createBoard({ webhooks, authorize: () => true, logger: { warn() {}, info() {} } })))
    const served = await listen(app as unknown as Parameters<typeof listen>[0])
    closers.push(served.close)
    // Created two days ago, an hour apart; parked last hour in the other order. evt_w_none has no created_at.
    const hour = 3_600_000
    const outage = Math.floor(Date.now() / hour) * hour - 48 * hour
    for (let i = 0; i < 4; i++) {
      await parkSigned(store, `evt_w_${i}`, {
        createdAt: new Date(outage + i * hour),
        parkedAt: new Date(Date.now() - (i + 1) * 60_000),
      })
    }
    await parkSigned(store, 'evt_w_none', { type: 'transaction_returned', parkedAt: new Date(Date.now() - 30_000) })

    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } })
    closers.push(() => context.close())
    const page = await context.newPage()
    const errors: string[] = []
    page.on('pageerror', (error) => errors.push(error.message))
    await page.goto(`${served.url}/ops/`)
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr').length === 5, undefined, WAIT)
    // The inputs take the browser's local time, as an operator types it.
    const local = (ms: number) =>
      page.evaluate((at) => {
        const date = new Date(at)
        const two = (n: number) => String(n).padStart(2, '0')
        return `${date.getFullYear()}-${two(date.getMonth() + 1)}-${two(date.getDate())}T${two(date.getHours())}:${two(date.getMinutes())}`
      }, ms)
    await page.locator('input[name="createdFrom"]').fill(await local(outage + hour))
    await page.locator('input[name="createdTo"]').fill(await local(outage + 3 * hour))
    await page.locator('#filters button[type="submit"]').click()
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr').length === 2, undefined, WAIT)
    const rows = await page
      .locator('#letters tbody tr')
      .evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-event-id')))
    expect(rows).toEqual(['evt_w_1', 'evt_w_2'])
    expect(page.url()).toContain(`createdFrom=${encodeURIComponent(new Date(outage + hour).toISOString())}`)

    await page.locator('#replay-matching').click()
    await page.locator('#confirm:not([hidden])').waitFor(WAIT)
    expect(await page.locator('#confirm').textContent()).toContain('Replay all 2 parked letter(s)')
    await page.locator('#confirm-yes').click()
    await page.locator('#notice[data-kind="ok"]').waitFor(WAIT)
    expect(await page.locator('#notice').textContent()).toBe('Replay: 2 processed')
    expect([...runs.keys()].sort()).toEqual(['evt_w_1', 'evt_w_2'])
    expect((await store.list()).map((letter) => letter.eventId)).toEqual(['evt_w_none', 'evt_w_0', 'evt_w_3'])
    expect(errors).toEqual([])
  })
})
