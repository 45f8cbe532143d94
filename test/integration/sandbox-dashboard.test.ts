// The sandbox's dashboard in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; never a downloaded browser). A receiver fails the first two attempts of every
// event; the page must show each attempt on the timeline, live, without a reload.
// SANDBOX_DASHBOARD_SCREENSHOT=path.png saves the final page (the README's picture);
// SANDBOX_DASHBOARD_ANSWERS_SCREENSHOT=path.png the page of puzzling answers (the README's second picture).
import { createHmac } from 'node:crypto'
import { createManualClock, createSandbox, type Sandbox } from '@payhooks/sandbox'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium } from '../fixtures/chromium.js'
import { call, type Receiver, startReceiver, unusedPort } from '../fixtures/sandbox-receivers.js'

const START = Date.parse('2026-11-02T15:00:00Z')
const WAIT = { timeout: 20_000, interval: 100 }
const SLOW = 120_000

let browser: Browser
let sandbox: Sandbox
let receiver: Receiver
let base: string

beforeAll(async () => {
  browser = await launchChromium()
  // Each event fails twice (500 with a body), then succeeds.
  receiver = await startReceiver((request) => {
    const eventId = String(request.json?.event_id)
    const seen = receiver.requests.filter((r) => r.json?.event_id === eventId).length
    return seen <= 2 ? { status: 500, body: 'database unavailable' } : { status: 200, body: 'ok' }
  })
  sandbox = createSandbox({ clock: createManualClock({ start: START }) })
  base = (await sandbox.listen()).url
}, SLOW)

afterAll(async () => {
  await browser?.close()
  await sandbox?.close()
  await receiver?.close()
})

/** A new page at `url`, and the script errors it throws. */
async function open(url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  const errors: string[] = []
  page.on('pageerror', (error) => errors.push(error.message))
  await page.goto(url)
  return { page, errors }
}

const card = (eventId: string) => `li.event[data-event-id="${eventId}"]`

/** The statuses the timeline shows for the event's first delivery, in order. */
function timeline(page: Page, eventId: string): Promise<string[]> {
  return page
    .locator(`${card(eventId)} .delivery .timeline .dot:not(.next)`)
    .evaluateAll((dots) => dots.map((dot) => (dot as HTMLElement).dataset.status ?? '?'))
}

const deliveryState = (page: Page, eventId: string) =>
  page
    .locator(`${card(eventId)} .delivery`)
    .first()
    .getAttribute('data-state')

describe('sandbox dashboard', () => {
  it('shows each attempt on the timeline as it happens, the clock advanced from the page, until the 200', {
    timeout: SLOW,
  }, async () => {
    const { page, errors } = await open(`${base}/`)
    await page.locator('#live[data-state="live"]').waitFor(WAIT)
    await page.evaluate(() => {
      ;(window as unknown as { loadedOnce: boolean }).loadedOnce = true
    })
    await expect.poll(() => page.locator('#clock-now').textContent(), WAIT).toBe('2026-11-02 15:00:00 UTC')
    expect(await page.locator('#clock-kind').textContent()).toBe('manual clock')

    // A subscription made after the page loaded appears without a reload.
    const { id: subscriptionId, signature_secret } = sandbox.subscribe({
      url: receiver.url,
      eventTypes: ['transaction_settled', 'payment_created'],
    })
    await page.locator(`li.subscription[data-subscription-id="${subscriptionId}"]`).waitFor(WAIT)
    expect(await page.locator('#subscriptions').textContent()).toContain(receiver.url)

    // Emit from the page: the first send fails.
    await page.selectOption('#emit-type', 'transaction_settled')
    await page.selectOption('#emit-merchant', '1234')
    await page.fill('#emit textarea[name="data"]', '{"settlement_amount": 12.5}')
    await page.click('#emit button[type="submit"]')
    await expect.poll(() => page.locator('#emit-result').textContent(), WAIT).toMatch(/sent to 1 subscription/)
    const [first] = sandbox.log()
    expect(first?.event).toMatchObject({
      event_type: 'transaction_settled',
      merchant_id: 1234,
      data: expect.objectContaining({ settlement_amount: 12.5 }),
    })
    const firstId = first?.eventId as string
    await expect.poll(() => timeline(page, firstId), WAIT).toEqual(['500'])
    expect(await deliveryState(page, firstId)).toBe('pending')
    expect(await page.locator(`${card(firstId)} .next-attempt`).textContent()).toBe(
      'next attempt 2026-11-02 16:00:00 (in 1 h)',
    )

    // One hour later, from the page's button: the first retry fails too.
    await page.click('#advance button[data-ms="3600000"]')
    await expect.poll(() => timeline(page, firstId), WAIT).toEqual(['500', '500'])
    await expect.poll(() => page.locator('#clock-now').textContent(), WAIT).toBe('2026-11-02 16:00:00 UTC')

    // An event emitted elsewhere shows up too.
    const emitted = await call(base, 'POST', '/_sandbox/emit', {
      body: { event_type: 'payment_created', merchant_id: 5678 },
    })
    const secondId = emitted.json.data.eventId as string
    await expect.poll(() => timeline(page, secondId), WAIT).toEqual(['500'])

    // Another hour: retry 2 of the first event gets its 200; the second event has its first retry.
    await page.click('#advance button[data-ms="3600000"]')
    await expect.poll(() => timeline(page, firstId), WAIT).toEqual(['500', '500', '200'])
    await expect.poll(() => deliveryState(page, firstId), WAIT).toBe('delivered')
    await expect.poll(() => timeline(page, secondId), WAIT).toEqual(['500', '500'])
    expect(await deliveryState(page, secondId)).toBe('pending')

    const rows = await page.locator(`${card(firstId)} table.attempts tbody tr`).allTextContents()
    expect(rows).toHaveLength(3)
    expect(rows[0]).toMatch(/first send2026-11-02 15:00:00 \(\+0 s\)500.*database unavailable/)
    expect(rows[1]).toMatch(/retry 12026-11-02 16:00:00 \(\+1 h\)500/)
    expect(rows[2]).toMatch(/retry 22026-11-02 17:00:00 \(\+2 h\)200.*ms.*ok$/)
    // A short answer is shown as it is, with nothing to unfold.
    const answers = page.locator(`${card(firstId)} table.attempts tbody td.answer`)
    expect(await answers.locator('details').count()).toBe(0)
    expect(await answers.locator('code').allTextContents()).toEqual([
      'database unavailable',
      'database unavailable',
      'ok',
    ])

    // The signature shown is the header sent: HMAC-SHA256 of the exact payload shown, upper-case hex.
    const shown = await page.locator(`${card(firstId)} .signature .sig`).textContent()
    await page.click(`${card(firstId)} details.payload summary`)
    const payload = await page.locator(`${card(firstId)} details.payload pre`).textContent()
    expect(payload).toBe(sandbox.log()[0]?.body)
    expect(shown).toBe(
      createHmac('sha256', signature_secret)
        .update(payload as string)
        .digest('hex')
        .toUpperCase(),
    )
    expect(receiver.requests.at(-1)?.headers['service-hmac-sha256']).toBeDefined()

    // Resend from the page: one more attempt, a 200.
    await page.click(`${card(firstId)} button.resend`)
    await expect.poll(() => timeline(page, firstId), WAIT).toEqual(['500', '500', '200', '200'])

    // An emit that reaches nobody says so, in the form and on the event.
    await page.selectOption('#emit-type', 'transaction_returned')
    await page.selectOption('#emit-merchant', '5678')
    await page.fill('#emit textarea[name="data"]', '')
    await page.click('#emit button[type="submit"]')
    await expect
      .poll(() => page.locator('#emit-result').textContent(), WAIT)
      .toMatch(/no active subscription gets transaction_returned events of merchant 5678/)
    expect(await page.locator('#emit-result').getAttribute('data-kind')).toBe('warning')
    const nowhere = sandbox.log().at(-1)?.eventId as string
    expect(
      await page
        .locator(`${card(nowhere)} .badge`)
        .first()
        .textContent(),
    ).toBe('sent nowhere')

    // All of it without a reload.
    expect(await page.evaluate(() => (window as unknown as { loadedOnce?: boolean }).loadedOnce)).toBe(true)
    expect(await page.evaluate(() => performance.getEntriesByType('navigation').length)).toBe(1)
    expect(await page.locator('li.event').count()).toBe(3)

    const screenshot = process.env.SANDBOX_DASHBOARD_SCREENSHOT
    if (screenshot) {
      await page.locator(`${card(nowhere)} > details > summary`).click() // fold it, for a compact picture
      await page.screenshot({ path: screenshot, fullPage: true })
    }
    expect(errors).toEqual([])
    await page.close()
  })

  it('stacks attempts that share an hour, dates them, keeps long errors out of the time column, unfolds whole answers, says what 401, future_event, stale_event and parked mean, and filters', {
    timeout: SLOW,
  }, async () => {
    const LONG = `Error: connect ECONNREFUSED 10.0.3.7:5432 while writing ledger row for transaction txn_0f8e7d6c in batch 2026-11-02T15:00 (pool exhausted after 30000 ms, 12 waiting clients, last error: too many connections for role "ledger_writer")`
    const refusing = await startReceiver(() => ({
      status: 401,
      body: '{"error":"invalid_signature","message":"service-hmac-sha256 does not match the body"}',
    }))
    let staleSeen = 0
    const puzzling = await startReceiver((request) =>
      request.json?.event_type === 'transaction_settled'
        ? {
            status: 503,
            body: `{"error":"future_event","message":"created_at is ahead of this receiver's clock; retry later"}`,
          }
        : request.json?.event_type === 'payment_created'
          ? // A resend too old to run: refused, then parked once the receiver has a durable dead-letter store.
            staleSeen++ === 0
            ? {
                status: 422,
                body: '{"error":"stale_event","message":"event older than this receiver accepts and not handled before; not acknowledged"}',
              }
            : { status: 200, body: `{"ok":true,"event_id":"${String(request.json?.event_id)}","status":"parked"}` }
          : { status: 500, body: LONG },
    )
    const answers = createSandbox({ clock: createManualClock({ start: START }) })
    const answersBase = (await answers.listen()).url
    try {
      answers.subscribe({ url: refusing.url, eventTypes: ['transaction_settled'] })
      answers.subscribe({
        url: puzzling.url,
        eventTypes: ['transaction_settled', 'payment_created', 'transaction_returned'],
      })
      answers.subscribe({
        url: `http://127.0.0.1:${await unusedPort()}/webhooks`,
        eventTypes: ['transaction_returned'],
      })
      const settled = await answers.emit('transaction_settled')
      await answers.resend([settled.eventId]) // a second attempt at 0 h
      const created = await answers.emit('payment_created')
      const returned = await answers.emit('transaction_returned')
      await answers.advance(3_600_000)

      const { page, errors } = await open(`${answersBase}/`)
      await page.locator('#live[data-state="live"]').waitFor(WAIT)
      await expect.poll(() => page.locator('li.event').count(), WAIT).toBe(3)

      // Two attempts at 0 h: their dots and labels stand apart.
      const first = page.locator(`${card(settled.eventId)} .delivery`).first()
      const dots = first.locator('.timeline .dot:not(.next)')
      expect(await dots.evaluateAll((list) => list.map((dot) => (dot as HTMLElement).dataset.stack))).toEqual([
        '0',
        '1',
        '0',
      ])
      const labels = await Promise.all([0, 1].map((n) => dots.nth(n).locator('.dot-label').boundingBox()))
      const [low, high] = labels as [NonNullable<(typeof labels)[0]>, NonNullable<(typeof labels)[0]>]
      expect(high.y + high.height).toBeLessThanOrEqual(low.y)
      const [dotA, dotB] = await Promise.all([dots.nth(0).boundingBox(), dots.nth(1).boundingBox()])
      expect((dotB?.x ?? 0) - (dotA?.x ?? 0)).toBeGreaterThanOrEqual(8)

      // Dated times; the time column keeps one line next to a long error or a long answer.
      const times = await first.locator('td.time').allTextContents()
      expect(times).toEqual(['2026-11-02 15:00:00 (+0 s)', '2026-11-02 15:00:00 (+0 s)', '2026-11-02 16:00:00 (+1 h)'])
      for (const delivery of [0, 1]) {
        const cell = page
          .locator(`${card(returned.eventId)} .delivery`)
          .nth(delivery)
          .locator('td.time')
          .first()
        const line = await page
          .locator(`${card(settled.eventId)} td.time`)
          .first()
          .boundingBox()
        expect((await cell.boundingBox())?.height).toBe(line?.height)
      }
      const unanswered = page
        .locator(`${card(returned.eventId)} .delivery`)
        .nth(1)
        .locator('tbody tr')
        .first()
      expect(await unanswered.locator('td.status').textContent()).toBe('no answer')
      expect(await unanswered.locator('td.answer').textContent()).toMatch(/ECONNREFUSED/)

      // A long answer unfolds whole.
      const long = page
        .locator(`${card(returned.eventId)} .delivery`)
        .first()
        .locator('td.answer details')
        .first()
      expect(await long.locator('pre').isVisible()).toBe(false)
      await long.locator('summary').click()
      expect(await long.locator('pre').textContent()).toBe(LONG)
      expect(await long.locator('pre').isVisible()).toBe(true)

      // What the puzzling answers mean, once per run of the same answer.
      const hints = (eventId: string, delivery = 0) =>
        page
          .locator(`${card(eventId)} .delivery`)
          .nth(delivery)
          .locator('tr.hint')
          .allTextContents()
      expect(await hints(settled.eventId)).toEqual([
        expect.stringMatching(
          /^401: the receiver refused the signature: it must verify with this subscription's signature_secret/,
        ),
      ])
      expect(await hints(settled.eventId, 1)).toEqual([
        expect.stringMatching(/^future_event: the event's created_at is ahead of the receiver's clock/),
      ])
      expect(await hints(created.eventId)).toEqual([
        expect.stringMatching(/^stale_event: the event's created_at is older than the receiver's maxEventAgeMs/),
        expect.stringMatching(
          /^parked: the receiver ran no handler but kept the event in its durable dead-letter store/,
        ),
      ])
      expect(await page.locator(`${card(returned.eventId)} tr.hint`).count()).toBe(0)

      const screenshot = process.env.SANDBOX_DASHBOARD_ANSWERS_SCREENSHOT
      if (screenshot) await page.screenshot({ path: screenshot, fullPage: true })

      // Filters: by type, by what an attempt got, by part of the id; the count says how many are shown.
      const shownIds = () =>
        page.locator('li.event').evaluateAll((list) => list.map((li) => (li as HTMLElement).dataset.eventId))
      await page.selectOption('#filter-type', 'payment_created')
      await expect.poll(shownIds, WAIT).toEqual([created.eventId])
      expect(await page.locator('#event-count').textContent()).toBe('1 of 3')
      await page.selectOption('#filter-type', { index: 0 })
      await page.selectOption('#filter-status', '401')
      await expect.poll(shownIds, WAIT).toEqual([settled.eventId])
      await page.selectOption('#filter-status', 'error')
      await expect.poll(shownIds, WAIT).toEqual([returned.eventId])
      await page.selectOption('#filter-status', 'delivered')
      await expect.poll(shownIds, WAIT).toEqual([created.eventId])
      await page.selectOption('#filter-status', { index: 0 })
      await page.fill('#filter-id', returned.eventId.slice(4, 12).toUpperCase())
      await expect.poll(shownIds, WAIT).toEqual([returned.eventId])
      await page.fill('#filter-id', 'evt_nothing_like_it')
      await expect.poll(shownIds, WAIT).toEqual([])
      expect(await page.locator('#no-match').isVisible()).toBe(true)
      // A live update of a filtered-out event keeps it out; clearing the filter brings all back, newest first.
      await answers.advance(3_600_000)
      expect(await shownIds()).toEqual([])
      await page.fill('#filter-id', '')
      await expect.poll(shownIds, WAIT).toEqual([returned.eventId, created.eventId, settled.eventId])
      expect(errors).toEqual([])
      await page.close()
    } finally {
      await answers.close()
      await refusing.close()
      await puzzling.close()
    }
  })

  it('asks for the token when the sandbox needs one, and keeps the one given as ?token=', {
    timeout: SLOW,
  }, async () => {
    const guarded = createSandbox({ clock: 'manual', requireControlToken: true })
    const guardedBase = (await guarded.listen()).url
    try {
      await guarded.emit('transaction_settled')
      const { page, errors } = await open(`${guardedBase}/`)
      await page.locator('#token-form').waitFor({ state: 'visible', ...WAIT })
      expect(await page.locator('#live').getAttribute('data-state')).toBe('locked')
      expect(await page.locator('li.event').count()).toBe(0)

      await page.goto(`${guardedBase}/_sandbox/ui?token=${encodeURIComponent(guarded.controlToken)}`)
      await page.locator('#live[data-state="live"]').waitFor(WAIT)
      await page.locator('li.event').first().waitFor(WAIT)
      expect(page.url()).toBe(`${guardedBase}/_sandbox/ui`)
      expect(await page.locator('#token-form').isHidden()).toBe(true)

      // Kept for the tab: a reload stays open, and buttons send it.
      await page.reload()
      await page.locator('#live[data-state="live"]').waitFor(WAIT)
      const before = guarded.clock.now()
      await page.click('#advance button[data-ms="3600000"]')
      await expect.poll(() => guarded.clock.now(), WAIT).toBe(before + 3_600_000)
      await expect
        .poll(() => page.locator('#clock-now').textContent(), WAIT)
        .toBe(`${new Date(before + 3_600_000).toISOString().replace('T', ' ').slice(0, 19)} UTC`)
      expect(errors).toEqual([])
      await page.close()
    } finally {
      await guarded.close()
    }
  })

  it('says "No event yet" only once its stream said so, and marks an event emitted with a past created_at', {
    timeout: SLOW,
  }, async () => {
    const empty = createSandbox({ clock: 'manual' })
    const emptyBase = (await empty.listen()).url
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      // The stream held back: the page knows nothing of the log yet.
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      await page.route('**/_sandbox/events*', async (route) => {
        await held
        await route.continue()
      })
      await page.goto(`${emptyBase}/`)
      await page.locator('#live[data-state="connecting"]').waitFor(WAIT)
      expect(await page.locator('#no-events').isHidden()).toBe(true)

      release()
      await page.locator('#live[data-state="live"]').waitFor(WAIT)
      await page.locator('#no-events').waitFor({ state: 'visible', ...WAIT })

      const createdAt = new Date(Date.now() - 75 * 3_600_000).toISOString()
      const { eventId } = await empty.emit('transaction_settled', undefined, { createdAt })
      const fresh = await empty.emit('transaction_settled')
      await page.locator(card(eventId)).waitFor(WAIT)
      await page.locator(card(fresh.eventId)).waitFor(WAIT)
      expect(await page.locator(`${card(eventId)} .badge.backdated`).textContent()).toBe('created_at 75 h ago')
      expect(await page.locator(`${card(eventId)} .badge.backdated`).getAttribute('title')).toBe(
        `emitted with created_at ${createdAt}`,
      )
      expect(await page.locator(`${card(fresh.eventId)} .badge.backdated`).count()).toBe(0)
      expect(await page.locator('#no-events').isHidden()).toBe(true)
      expect(errors).toEqual([])
      await page.close()
    } finally {
      await empty.close()
    }
  })

  it('folds runs of equal attempts: 8 events of 73 failed attempts fit a short page, no label over another', {
    timeout: SLOW,
  }, async () => {
    const down = await startReceiver(() => ({ status: 500, body: 'down' }))
    const failing = createSandbox({ clock: createManualClock({ start: START }) })
    const failingBase = (await failing.listen()).url
    try {
      failing.subscribe({ url: down.url, eventTypes: ['transaction_settled'] })
      for (let n = 0; n < 8; n++) await failing.emit('transaction_settled')
      await failing.advance(72 * 3_600_000)
      const { page, errors } = await open(`${failingBase}/`)
      await expect.poll(() => page.locator('li.event').count(), WAIT).toBe(8)
      const height = await page.evaluate(() => document.documentElement.scrollHeight)
      expect(height).toBeLessThan(4000)
      // Each timeline: one label per run (500 ×73), labels never overlapping.
      const first = page.locator('li.event .delivery').first()
      expect(await first.locator('.dot-label').allTextContents()).toEqual(['500 ×73'])
      expect(await first.locator('tr.fold').textContent()).toContain('71 more with the same answer')
      const boxes = await page
        .locator('.timeline')
        .evaluateAll((lines) =>
          lines.map((line) =>
            Array.from(
              line.querySelectorAll('.dot-label'),
              (label) => label.getBoundingClientRect().toJSON() as DOMRect,
            ),
          ),
        )
      for (const labels of boxes) {
        for (const [i, a] of labels.entries()) {
          for (const b of labels.slice(i + 1)) {
            const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top
            expect(apart).toBe(true)
          }
        }
      }
      if (process.env.SANDBOX_DASHBOARD_FOLD_SCREENSHOT) {
        await page.screenshot({ path: process.env.SANDBOX_DASHBOARD_FOLD_SCREENSHOT, fullPage: true })
      }
      expect(errors).toEqual([])
      await page.close()
    } finally {
      await failing.close()
      await down.close()
    }
  })
})
