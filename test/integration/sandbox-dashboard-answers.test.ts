// The sandbox's dashboard in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; never a downloaded browser): how it shows many attempts and puzzling answers, and filters.
// SANDBOX_DASHBOARD_ANSWERS_SCREENSHOT=path.png saves the page of puzzling answers (the README's second picture),
// SANDBOX_DASHBOARD_FOLD_SCREENSHOT=path.png the page of folded attempts.
import { createManualClock, createSandbox } from '@payhooks/sandbox'
import { describe, expect, it } from 'vitest'
import { card, open, SLOW, START, useBrowser, WAIT } from '../fixtures/sandbox-dashboard.js'
import { REFUSING_PORT, startReceiver } from '../fixtures/sandbox-receivers.js'

useBrowser()

describe('sandbox dashboard', () => {
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
        url: `http://127.0.0.1:${REFUSING_PORT}/webhooks`,
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
