// @payhooks/board in a real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core): Express
// with a Redis dead-letter store, Hono with a PostgreSQL one. A parked letter is listed, opened, replayed from
// the page (its handler runs once; a second click says duplicate); filters; read-only; an unauthorized request
// and a cross-site form POST refused; an XSS payload in a parked body shown as text. Express with memory stores:
// this instance's stats() on the overview, the secrets page, the held ordering keys, replay all in batches.
// BOARD_SCREENSHOTS=<folder> saves each page (the README's pictures).
import { randomUUID } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { getRequestListener } from '@hono/node-server'
import { createBoard } from '@payhooks/board'
import { expressBoard } from '@payhooks/board/express'
import { honoBoard } from '@payhooks/board/hono'
import { createWebhooks, type DeadLetterStore, memoryDeadLetterStore, memoryStore } from '@payhooks/core'
import { postgresDeadLetterStore } from '@payhooks/postgres'
import { redisDeadLetterStore } from '@payhooks/redis'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import express from 'express'
import { type Context, Hono } from 'hono'
import { Redis } from 'ioredis'
import pg from 'pg'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listen } from '../fixtures/apps.js'
import { BOARD_SECRET, boardReceiver, parkSigned } from '../fixtures/board.js'
import { launchChromium } from '../fixtures/chromium.js'
import { databaseUrl } from '../fixtures/postgres.js'

const WAIT = { timeout: 15_000 }
const SLOW = 90_000
const SHOTS = process.env.BOARD_SCREENSHOTS
const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests through `pnpm test`')
const XSS = '<img src=x onerror="window.__xss=1"><script>window.__xss=2</script>'

let browser: Browser
const closers: (() => Promise<unknown>)[] = []

beforeAll(async () => {
  browser = await launchChromium()
}, SLOW)

afterAll(async () => {
  await browser?.close()
  for (const close of closers.reverse()) await close()
})

/** A browser context of an operator: the app's auth is the x-ops header here. */
async function operator(timezoneId?: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 860 },
    extraHTTPHeaders: { 'x-ops': 'yes' },
    ...(timezoneId ? { timezoneId } : {}),
  })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  closers.push(() => context.close())
  return { context, page, errors }
}

const shot = async (page: Page, name: string, fullPage = true) => {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, name), fullPage })
}

/** Opens the letter from the list, replays it twice from the page: processed, then duplicate. */
async function replayTwice(page: Page, eventId: string, runs: Map<string, number>) {
  await page.locator(`#letters tr[data-event-id="${eventId}"] a`).click()
  await page.locator(`#letter[data-event-id="${eventId}"]`).waitFor(WAIT)
  // The label stays readable on hover: its colour is not the button's background.
  await page.locator('#replay').hover()
  const colours = await page
    .locator('#replay')
    .evaluate((button) => [getComputedStyle(button).color, getComputedStyle(button).backgroundColor])
  expect(colours[0]).not.toBe(colours[1])
  await shot(page, 'board-replay-hover.png', false)
  expect(await page.locator('#replayed-at').textContent()).toBe('—')
  await page.locator('#replay').click()
  await page.locator('#result[data-kind="ok"]').waitFor(WAIT)
  expect(await page.locator('#result').textContent()).toContain('Processed')
  expect(runs.get(eventId)).toBe(1)
  // The letter shows its new state without a reload.
  expect(await page.locator('#status').textContent()).toBe('replayed')
  expect(await page.locator('#replayed-at').textContent()).not.toBe('—')
  await shot(page, 'board-replayed.png', false)
  await page.locator('#replay:not([disabled])').waitFor(WAIT)
  await page.locator('#replay').click()
  await page.locator('#result[data-kind="warning"]').waitFor(WAIT)
  expect(await page.locator('#result').textContent()).toContain('Duplicate')
  expect(runs.get(eventId)).toBe(1)
}

describe('board on Express with a Redis dead-letter store', () => {
  let url: string
  let runs: Map<string, number>
  let store: DeadLetterStore

  beforeAll(async () => {
    const redis = new Redis(REDIS_URL)
    closers.push(() => redis.quit())
    store = redisDeadLetterStore(redis, { keyPrefix: `{board-${randomUUID()}}:` })
    const receiver = boardReceiver(store)
    runs = receiver.runs
    const quiet = { warn() {}, info() {} }
    const authorize = (req: express.Request) => req.get('x-ops') === 'yes'
    const app = express()
    app.use('/admin/payhooks', expressBoard(createBoard({ webhooks: receiver.webhooks, authorize, logger: quiet })))
    app.use('/ro', expressBoard(createBoard({ webhooks: receiver.webhooks, authorize, readOnly: true, logger: quiet })))
    const served = await listen(app as unknown as Parameters<typeof listen>[0])
    closers.push(served.close)
    url = `${served.url}/admin/payhooks/`
    const hour = (h: number) => new Date(Date.now() - h * 3_600_000)
    await parkSigned(store, 'evt_settled_1', { parkedAt: hour(3), reason: 'ledger unavailable (ECONNRESET)' })
    await parkSigned(store, 'evt_refund_1', {
      type: 'transaction_refunded',
      code: 'schema_mismatch',
      parkedAt: hour(2),
      reason: 'data.amount: expected number, received "10.30"',
    })
    await parkSigned(store, 'evt_xss', { data: { note: XSS }, reason: XSS, parkedAt: hour(1) })
  }, SLOW)

  it('lists the parked letters, opens one whole, replays it once, then says duplicate', { timeout: SLOW }, async () => {
    const { page, errors } = await operator()
    await page.goto(url)
    await page.locator('#letters tbody tr').first().waitFor(WAIT)
    expect(
      await page
        .locator('#letters tbody tr')
        .evaluateAll((rows) => rows.map((r) => (r as HTMLElement).dataset.eventId)),
    ).toEqual(['evt_xss', 'evt_refund_1', 'evt_settled_1'])
    // A count and a time, each labelled as such.
    expect(await page.locator('#letters thead th').allTextContents()).toEqual(
      expect.arrayContaining(['Times parked', 'Last parked at']),
    )
    await shot(page, 'board-letters.png')
    await page.locator('#letters tr[data-event-id="evt_refund_1"] a').click()
    await page.locator('#body').waitFor(WAIT)
    expect(await page.locator('#body').textContent()).toContain('"event_id": "evt_refund_1"')
    await page.locator('button[data-tab="raw"]').click()
    const raw = await page.locator('#body').textContent()
    expect(JSON.parse(raw ?? '').event_id).toBe('evt_refund_1')
    expect(raw).not.toContain('\n  ')
    await page.locator('button[data-tab="pretty"]').click()
    await shot(page, 'board-letter.png')
    await page.goBack()
    await replayTwice(page, 'evt_settled_1', runs)
    expect((await store.get('evt_settled_1'))?.status).toBe('replayed')
    expect(errors).toEqual([])
  })

  it('shows an XSS payload of a parked body and reason as text, running nothing', { timeout: SLOW }, async () => {
    const { page, errors } = await operator()
    await page.goto(`${url}#/letter/evt_xss`)
    await page.locator('#letter').waitFor(WAIT)
    expect(await page.locator('#letter').textContent()).toContain(XSS)
    expect(await page.locator('#body').textContent()).toContain('<script>window.__xss=2</script>')
    expect(await page.locator('#view img, #view script').count()).toBe(0)
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
    await page.goto(url)
    await page.locator('#letters tr[data-event-id="evt_xss"]').waitFor(WAIT)
    expect(await page.locator('#letters tr[data-event-id="evt_xss"] td.reason').textContent()).toBe(XSS)
    expect(await page.evaluate(() => (window as { __xss?: number }).__xss)).toBeUndefined()
    expect(errors).toEqual([])
  })

  it('filters by code and event id, and replays all matching after confirming the count', {
    timeout: SLOW,
  }, async () => {
    const { page } = await operator()
    await page.goto(url)
    await page.locator('#letters').waitFor(WAIT)
    await page.locator('select[name="code"]').selectOption('schema_mismatch')
    await page.locator('#filters button[type="submit"]').click()
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr').length === 1, undefined, WAIT)
    expect(await page.locator('#letters tbody tr').getAttribute('data-event-id')).toBe('evt_refund_1')
    await page.locator('#replay-matching').click()
    await page.locator('#confirm:not([hidden])').waitFor(WAIT)
    expect(await page.locator('#confirm').textContent()).toContain('Replay all 1 parked letter(s)')
    await page.locator('#confirm-yes').click()
    await page.locator('#notice:not([hidden])').waitFor(WAIT)
    // Parked with schema_mismatch, but its bytes pass today's schema (as once the schema is fixed).
    expect(await page.locator('#notice').textContent()).toBe('Replay: 1 processed')
    expect(runs.get('evt_refund_1')).toBe(1)
    await page.waitForFunction(() => document.querySelector('#no-letters') !== null, undefined, WAIT)

    await page.locator('input[name="eventId"]').fill('evt_xss')
    await page.locator('select[name="code"]').selectOption('')
    await page.locator('#filters button[type="submit"]').click()
    await page.waitForFunction(
      () =>
        document.querySelectorAll('#letters tbody tr').length === 1 &&
        document.querySelector('#letters tbody tr')?.getAttribute('data-event-id') === 'evt_xss',
      undefined,
      WAIT,
    )
  })

  it('read-only: no replay or delete on the page, and the API refuses them', { timeout: SLOW }, async () => {
    const { page } = await operator()
    await page.goto(`${url.replace('/admin/payhooks/', '/ro/')}`)
    await page.locator('#letters').waitFor(WAIT)
    expect(await page.locator('#mode').isVisible()).toBe(true)
    expect(await page.locator('#letters input[type="checkbox"], #replay-selected, #replay-matching').count()).toBe(0)
    await page.locator('#letters tr[data-event-id="evt_xss"] a').click()
    await page.locator('#letter').waitFor(WAIT)
    expect(await page.locator('#replay, #delete').count()).toBe(0)
    await shot(page, 'board-read-only.png')
    const status = await page.evaluate(async () => {
      const token = document.querySelector<HTMLMetaElement>('meta[name="payhooks-board-csrf"]')?.content ?? ''
      const response = await fetch('api/dead-letters/replay', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-payhooks-board-csrf': token },
        body: JSON.stringify({ eventIds: ['evt_xss'] }),
      })
      return response.status
    })
    expect(status).toBe(403)
    expect(runs.get('evt_xss')).toBeUndefined()
  })

  it('refuses an unauthorized request and a cross-site form POST', { timeout: SLOW }, async () => {
    const stranger = await browser.newContext()
    closers.push(() => stranger.close())
    const refused = await (await stranger.newPage()).goto(url)
    expect(refused?.status()).toBe(403)

    // An operator, logged in, lured to another origin whose page posts a form to the board.
    const evil = createServer((_req, res) => {
      res.setHeader('content-type', 'text/html')
      res.end(`<form id="f" method="POST" action="${url}api/dead-letters/replay" enctype="text/plain">
<input name='{"eventIds":["evt_xss"],"x":"' value='"}'></form><script>document.getElementById('f').submit()</script>`)
    })
    await new Promise<void>((resolve) => evil.listen(0, '127.0.0.1', resolve))
    closers.push(() => new Promise((resolve) => evil.close(resolve)))
    const { page } = await operator()
    await page.goto(url)
    await page.locator('#letters').waitFor(WAIT)
    const answered = page.waitForResponse((response) => response.url().endsWith('/api/dead-letters/replay'), WAIT)
    await page.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`)
    const response = await answered
    expect(response.status()).toBe(403)
    expect(await response.text()).toContain('cross-origin')
    expect(runs.get('evt_xss')).toBeUndefined()
    expect((await store.get('evt_xss'))?.status).toBe('parked')
  })

  it('shows the overview: parked letters by code', { timeout: SLOW }, async () => {
    const { page } = await operator()
    await page.goto(`${url}#/overview`)
    await page.locator('#counts .card').first().waitFor(WAIT)
    expect(await page.locator('#counts').textContent()).toContain('dead letters parked')
    expect(await page.locator('.note').first().textContent()).toContain('shared through the store')
    // The receiver's health() checks, the Redis dead-letter store's among them; no address shown.
    await page.locator('#health li').first().waitFor(WAIT)
    const health = (await page.locator('#health').textContent()) ?? ''
    expect(health).toMatch(/^Health: (not )?ready/)
    expect(await page.locator('#health li').count()).toBeGreaterThan(1)
    // The receiver's closing check, green, says the receiver is open rather than reading "closing".
    expect(await page.locator('#health li.check.ok').allTextContents()).toContain('receiver open: accepting deliveries')
    expect(health).not.toMatch(/\bclosing\b/)
    await shot(page, 'board-overview.png')
    expect(health).not.toContain('127.0.0.1')
    expect(health).not.toContain('redis://')
  })
})

describe('board times', () => {
  let url: string

  beforeAll(async () => {
    const store = memoryDeadLetterStore()
    const receiver = boardReceiver(store)
    const app = express()
    const board = createBoard({ webhooks: receiver.webhooks, unsafeNoAuthorization: true, logger: { warn() {} } })
    app.use('/admin/payhooks', expressBoard(board))
    const served = await listen(app as unknown as Parameters<typeof listen>[0])
    closers.push(served.close)
    url = `${served.url}/admin/payhooks/`
    // Late on a Monday in New York, already Tuesday in UTC.
    await parkSigned(store, 'evt_zone', { parkedAt: new Date('2026-11-24T03:30:00Z') })
  }, SLOW)

  it("shows every time with its zone, the browser's or UTC at the operator's choice, kept on reload", {
    timeout: SLOW,
  }, async () => {
    const { page, errors } = await operator('America/New_York')
    await page.goto(`${url}#/letter/evt_zone`)
    await page.locator('#letter').waitFor(WAIT)
    const parkedAt = () => page.locator('dt:text-is("Last parked at") + dd').textContent()
    expect(await parkedAt()).toMatch(/^Nov 23, 2026, 10:30:00\s?PM EST$/)
    expect(await page.locator('#zone').textContent()).toBe('Times: EST')
    await page.locator('#zone').click()
    await expect.poll(parkedAt, WAIT).toMatch(/^Nov 24, 2026, 3:30:00\s?AM UTC$/)
    expect(await page.locator('#zone').textContent()).toBe('Times: UTC')
    await page.reload()
    await page.locator('#letter').waitFor(WAIT)
    expect(await parkedAt()).toMatch(/UTC$/)
    // The list's filter reads its times in the zone shown, and says which.
    await page.goto(`${url}#/?from=2026-11-24T00:00:00.000Z`)
    await page.locator('#filters').waitFor(WAIT)
    expect(await page.locator('#filters input[name="from"]').inputValue()).toBe('2026-11-24T00:00')
    expect(await page.locator('#filters label').first().textContent()).toContain('from (UTC)')
    await page.locator('#zone').click()
    await expect.poll(() => page.locator('#filters input[name="from"]').inputValue(), WAIT).toBe('2026-11-23T19:00')
    expect(errors).toEqual([])
  })
})

describe('board on Hono with a PostgreSQL dead-letter store', () => {
  let url: string
  let runs: Map<string, number>
  let store: DeadLetterStore

  beforeAll(async () => {
    const pool = new pg.Pool({ connectionString: databaseUrl(), max: 3 })
    const table = `board_${randomUUID().replaceAll('-', '').slice(0, 12)}`
    closers.push(async () => {
      await pool.query(`DROP TABLE IF EXISTS ${table}`)
      await pool.end()
    })
    store = postgresDeadLetterStore(pool, { table, sweepIntervalMs: 0 })
    await store.init?.()
    const receiver = boardReceiver(store)
    runs = receiver.runs
    const app = new Hono()
    const serve = honoBoard(
      createBoard({
        webhooks: receiver.webhooks,
        authorize: (c: Context) => c.req.header('x-ops') === 'yes',
        logger: { warn() {}, info() {} },
      }),
      { path: '/ops' },
    )
    app.all('/ops', serve)
    app.all('/ops/*', serve)
    const served = await listen(getRequestListener(app.fetch))
    closers.push(served.close)
    url = `${served.url}/ops/`
    await parkSigned(store, 'evt_pg_1', { parkedAt: new Date(Date.now() - 60_000) })
    await parkSigned(store, 'evt_pg_2', { code: 'schema_mismatch' })
    await parkSigned(store, 'evt_pg_3', { code: 'schema_mismatch', parkedAt: new Date(Date.now() - 120_000) })
  }, SLOW)

  it('lists, filters, opens and replays a letter once, then says duplicate; refuses a stranger', {
    timeout: SLOW,
  }, async () => {
    const { page, errors } = await operator()
    await page.goto(url)
    await page.locator('#letters tbody tr').first().waitFor(WAIT)
    expect(await page.locator('#letters tbody tr').count()).toBe(3)
    await page.locator('select[name="code"]').selectOption('handler_failed')
    await page.locator('#filters button[type="submit"]').click()
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr').length === 1, undefined, WAIT)
    await replayTwice(page, 'evt_pg_1', runs)
    expect((await store.get('evt_pg_1'))?.status).toBe('replayed')
    expect(errors).toEqual([])
    const stranger = await browser.newContext()
    closers.push(() => stranger.close())
    expect((await (await stranger.newPage()).goto(url))?.status()).toBe(403)
  })

  it('replays the selected letters, and deletes one after confirming', { timeout: SLOW }, async () => {
    const { page, errors } = await operator()
    await page.goto(url)
    await page.locator('#letters tr[data-event-id="evt_pg_3"]').waitFor(WAIT)
    await page.locator('#letters tr[data-event-id="evt_pg_3"] input[type="checkbox"]').check()
    await page.locator('#replay-selected').click()
    await page.locator('#notice[data-kind="ok"]').waitFor(WAIT)
    expect(await page.locator('#notice').textContent()).toBe('Replay: 1 processed')
    expect(runs.get('evt_pg_3')).toBe(1)
    await page.waitForFunction(() => !document.querySelector('#letters tr[data-event-id="evt_pg_3"]'), undefined, WAIT)

    await page.locator('#letters tr[data-event-id="evt_pg_2"] a').click()
    await page.locator('#delete').click()
    await page.locator('#confirm-yes').click()
    await page.locator('#notice[data-kind="ok"]').waitFor(WAIT)
    expect(await page.locator('#notice').textContent()).toBe('Deleted evt_pg_2.')
    await page.locator('#no-letters').waitFor(WAIT)
    expect(await store.get('evt_pg_2')).toBeUndefined()
    expect(runs.get('evt_pg_2')).toBeUndefined()
    expect(errors).toEqual([])
  })

  it('pages through many letters, 50 a page, filtered by event type', { timeout: SLOW }, async () => {
    const start = Date.now() - 3_600_000
    for (let i = 0; i < 55; i++) {
      await parkSigned(store, `evt_many_${String(i).padStart(2, '0')}`, {
        type: 'transaction_refunded',
        parkedAt: new Date(start + i * 1000),
      })
    }
    const { page, errors } = await operator()
    await page.goto(`${url}#/?eventType=transaction_refunded`)
    await page.locator('#letters tbody tr').first().waitFor(WAIT)
    expect(await page.locator('#letters tbody tr').count()).toBe(50)
    expect(await page.locator('#letters tbody tr').first().getAttribute('data-event-id')).toBe('evt_many_54')
    await page.locator('.pager a', { hasText: 'older' }).click()
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr').length === 5, undefined, WAIT)
    expect(await page.locator('.pager').textContent()).toContain('51–55')
    expect(await page.locator('#letters tbody tr').last().getAttribute('data-event-id')).toBe('evt_many_00')
    expect(new URL(page.url()).hash).toContain('after=')
    await page.locator('.pager a', { hasText: 'newer' }).click()
    await page.waitForFunction(() => document.querySelectorAll('#letters tbody tr').length === 50, undefined, WAIT)
    expect(await page.locator('#letters tbody tr').first().getAttribute('data-event-id')).toBe('evt_many_54')
    expect(await page.locator('.pager').textContent()).toContain('1–50')
    expect(errors).toEqual([])
  })
})

describe('board on Express with memory stores: this instance, secrets, ordering keys, replay in batches', () => {
  const NEW = 'whsec_board_tests_new'
  let url: string
  const runs = new Map<string, number>()
  let deadLetters: DeadLetterStore
  let release = () => {}
  let held: Promise<{ status: string }> | undefined

  beforeAll(async () => {
    deadLetters = memoryDeadLetterStore()
    const webhooks = createWebhooks({
      secret: [
        { secret: NEW, label: 'sub_2026_q4' },
        { secret: BOARD_SECRET, label: '<i>sub_2026_q3</i>' },
      ],
      store: memoryStore(),
      deadLetters,
      checkAtStart: false,
      logger: { error() {} },
      ordering: {
        transaction_settled: {
          key: (event: { data: { transaction_id: string } }) => event.data.transaction_id,
          at: (event: { data: { settlement_date: string } }) => event.data.settlement_date,
        },
      },
    })
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    webhooks.onAny(async (event) => {
      runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
      if (event.event_id.startsWith('evt_fail')) throw new Error('ledger down')
      if (event.event_id === 'evt_hold') await gate
      // Replays run 4 at a time: slow enough that the stop button lands midway.
      if (event.event_id.startsWith('evt_batch')) await sleep(160)
    })
    const authorize = (req: express.Request) => req.get('x-ops') === 'yes'
    const quiet = { warn() {}, info() {} }
    const app = express()
    app.use('/admin/payhooks', expressBoard(createBoard({ webhooks, authorize, logger: quiet, replayBatchSize: 25 })))
    // A receiver as an older core made it: no stats(), no heldKeys().
    const older = createBoard({ webhooks: { deadLetters: webhooks.deadLetters }, authorize, logger: quiet })
    app.use('/older', expressBoard(older))
    const served = await listen(app as unknown as Parameters<typeof listen>[0])
    closers.push(served.close)
    closers.push(async () => {
      release()
      await held
    })
    url = `${served.url}/admin/payhooks/`

    const deliver = async (id: string, key: string, options: { createdAt?: string } = {}) => {
      const event = sampleEvent('transaction_settled', { eventId: id, createdAt: options.createdAt })
      const { body, headers } = await signedDelivery(JSON.stringify(event), key)
      return webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name as keyof typeof headers] })
    }
    for (let i = 0; i < 24; i++) await deliver(`evt_ok_${i}`, NEW)
    for (let i = 0; i < 6; i++) await deliver(`evt_old_${i}`, BOARD_SECRET)
    const created = new Date(Date.now() - 26 * 3_600_000).toISOString()
    for (let i = 0; i < 2; i++) expect((await deliver('evt_fail_oldest', NEW, { createdAt: created })).status).toBe(500)
    expect((await deliver('evt_fail_newer', NEW)).status).toBe(500)
    // A replay holds its ordering key with no deadline to answer by: the key stays held until released.
    await parkSigned(deadLetters, 'evt_hold', { data: { transaction_id: 'txn_<b>held</b>' } })
    held = webhooks.deadLetters.replay('evt_hold')
    const start = Date.now() - 2 * 3_600_000
    for (let i = 0; i < 120; i++) {
      await parkSigned(deadLetters, `evt_batch_${String(i).padStart(3, '0')}`, { parkedAt: new Date(start + i * 1000) })
    }
  }, SLOW)

  it("shows this instance's last hour on the overview, labelled as this instance's", { timeout: SLOW }, async () => {
    const { page, errors } = await operator()
    await page.goto(`${url}#/overview`)
    await page.locator('#instance-cards .card').first().waitFor(WAIT)
    const cards = await page
      .locator('#instance-cards .card')
      .evaluateAll((all) => all.map((card) => Array.from(card.children, (part) => part.textContent).join(' ')))
    expect(cards[0]).toBe('33 deliveries answered (this instance)')
    expect(cards[1]).toMatch(/^≤ [\d.]+ ms answer latency p50 \(this instance\)$/)
    expect(cards[3]).toBe('1 in flight now (this instance)')
    expect(cards[4]).toBe('0 waiting for a slot (this instance)')
    expect(await page.locator('#instance .note').first().textContent()).toContain('Counted in this process since')
    expect(await page.locator('#outcomes').textContent()).toContain('handler_failed3')
    const oldest = (await page.locator('#oldest-retried').textContent()) ?? ''
    expect(oldest).toContain('evt_fail_oldest')
    expect(oldest).toContain('Attempts here2')
    expect(await page.locator('#per-minute span').count()).toBe(60)
    expect(errors).toEqual([])
    await shot(page, 'board-overview.png')
  })

  it('shows verifications per secret, with labels as text and when each was last used', { timeout: SLOW }, async () => {
    const { page, errors } = await operator()
    await page.goto(`${url}#/secrets`)
    await page.locator('#secrets tbody tr').first().waitFor(WAIT)
    const rows = await page
      .locator('#secrets tbody tr')
      .evaluateAll((all) =>
        all.map((row) => Array.from(row.querySelectorAll('td'), (td) => td.textContent).slice(0, 3)),
      )
    expect(rows).toEqual([
      ['0', 'sub_2026_q4', '27'],
      ['1', '<i>sub_2026_q3</i>', '6'],
    ])
    expect(await page.locator('#secrets i').count()).toBe(0)
    expect(await page.locator('#secrets-scope').textContent()).toMatch(/since .*payhooks\.secret\.verified/)
    expect(await page.locator('#secret-1-hours span').count()).toBe(72)
    expect(await page.locator('nav a[aria-current="page"]').textContent()).toBe('Secrets')
    expect(errors).toEqual([])
    await shot(page, 'board-secrets.png')
  })

  it('lists the ordering key held (key, event, held for, expires in), then none once released', {
    timeout: SLOW,
  }, async () => {
    const { page, errors } = await operator()
    await page.goto(`${url}#/keys`)
    await page.locator('#keys tbody tr').first().waitFor(WAIT)
    const cells = await page.locator('#keys tbody tr td').allTextContents()
    expect(cells.slice(0, 3)).toEqual(['txn_<b>held</b>', 'evt_hold', 'transaction_settled'])
    expect(cells[3]).toMatch(/^\d+ (s|min)$/)
    expect(cells[4]).toMatch(/^(\d+ (s|min)|expired)$/)
    expect(await page.locator('#keys b').count()).toBe(0)
    await shot(page, 'board-keys.png')
    release()
    expect((await held)?.status).toBe('processed')
    await page.reload()
    await page.locator('#no-keys').waitFor(WAIT)
    expect(await page.locator('#no-keys').textContent()).toBe('No ordering key is held.')
    expect(errors).toEqual([])

    // Without stats() and heldKeys(), the pages say so.
    const older = url.replace('/admin/payhooks/', '/older/')
    await page.goto(`${older}#/keys`)
    await page.locator('#no-keys').waitFor(WAIT)
    expect(await page.locator('#no-keys').textContent()).toContain('This store does not list held keys')
    await page.goto(`${older}#/secrets`)
    await page.locator('#no-secrets').waitFor(WAIT)
    await page.goto(`${older}#/overview`)
    await page.locator('#instance .note').waitFor(WAIT)
    expect(await page.locator('#instance .note').textContent()).toContain('no stats()')
  })

  it('replays all matching in batches with progress, can stop, and finishes later: each handler once', {
    timeout: SLOW,
  }, async () => {
    const { page, errors } = await operator()
    await page.goto(`${url}#/?eventType=transaction_settled`)
    await page.locator('#letters tbody tr').first().waitFor(WAIT)
    await page.locator('#replay-matching').click()
    await page.locator('#confirm:not([hidden])').waitFor(WAIT)
    expect(await page.locator('#confirm').textContent()).toContain('Replay all 120 parked letter(s)')
    expect(runs.has('evt_batch_000')).toBe(false)
    await page.locator('#confirm-yes').click()
    await page.locator('#replay-progress').waitFor(WAIT)
    await page.waitForFunction(
      () => document.querySelector('#replay-progress-text')?.textContent?.startsWith('Replayed 25 of 120'),
      undefined,
      WAIT,
    )
    await shot(page, 'board-replay-progress.png', false)
    await page.locator('#replay-stop').click()
    await page.locator('#notice[data-kind="error"]').waitFor(WAIT)
    const stopped = (await page.locator('#notice').textContent()) ?? ''
    const done = Number(/^Stopped after (\d+) of 120\. Replay: \1 processed$/.exec(stopped)?.[1])
    expect(done % 25).toBe(0)
    expect(done).toBeGreaterThanOrEqual(50)
    expect(done).toBeLessThan(120)
    // Oldest first: the letters replayed are the oldest ones.
    expect(runs.has('evt_batch_000')).toBe(true)
    expect(runs.has('evt_batch_119')).toBe(false)

    await page.locator('#replay-matching').click()
    await page.locator('#confirm:not([hidden])').waitFor(WAIT)
    expect(await page.locator('#confirm').textContent()).toContain(`Replay all ${120 - done} parked letter(s)`)
    await page.locator('#confirm-yes').click()
    await page.locator('#notice[data-kind="ok"]').waitFor({ timeout: 60_000 })
    expect(await page.locator('#notice').textContent()).toBe(`Replay: ${120 - done} processed`)
    const batchRuns = [...runs].filter(([id]) => id.startsWith('evt_batch'))
    expect(batchRuns).toHaveLength(120)
    expect(batchRuns.every(([, count]) => count === 1)).toBe(true)
    expect(errors).toEqual([])
  })
})
