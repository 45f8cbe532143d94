// @payhooks/board in a real headless Chromium: Hono with a PostgreSQL dead-letter store (list, filter, replay once,
// replay selected, delete, pages); Express with memory stores: this instance's stats() on the overview, the secrets
// page, the held ordering keys, replay all in batches.
import { randomUUID } from 'node:crypto'
import { getRequestListener } from '@hono/node-server'
import { createBoard } from '@payhooks/board'
import { expressBoard } from '@payhooks/board/express'
import { honoBoard } from '@payhooks/board/hono'
import { createWebhooks, type DeadLetterStore, memoryDeadLetterStore, memoryStore } from '@payhooks/core'
import { postgresDeadLetterStore } from '@payhooks/postgres'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import express from 'express'
import { type Context, Hono } from 'hono'
import pg from 'pg'
import { beforeAll, describe, expect, it } from 'vitest'
import { listen } from '../fixtures/apps.js'
import { BOARD_SECRET, boardReceiver, parkSigned } from '../fixtures/board.js'
import { browser, browserPerFile, closers, operator, replayTwice, SLOW, shot, WAIT } from '../fixtures/board-browser.js'
import { databaseUrl } from '../fixtures/postgres.js'

browserPerFile()

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
  // The replay's second batch waits for the test to have clicked stop: the click lands midway, whatever the load.
  let resumeBatches = () => {}
  const batchesHeld = new Promise<void>((resolve) => {
    resumeBatches = resolve
  })

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
      if (event.event_id === 'evt_batch_025') await batchesHeld
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
      resumeBatches()
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
    resumeBatches()
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
