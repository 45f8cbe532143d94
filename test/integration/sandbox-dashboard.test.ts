// The sandbox's dashboard in a real headless Chromium (Debian's /usr/bin/chromium, driven by
// playwright-core; never a downloaded browser). A receiver fails the first two attempts of every
// event; the page must show each attempt on the timeline, live, without a reload. It asks for the token
// a sandbox needs, and says "No event yet" only once its stream said so.
// SANDBOX_DASHBOARD_SCREENSHOT=path.png saves the final page (the README's picture); the page of puzzling
// answers is sandbox-dashboard-answers.test.ts's.
import { createHmac } from 'node:crypto'
import { createManualClock, createSandbox, type Sandbox } from '@payhooks/sandbox'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { browser, card, open, SLOW, START, useBrowser, WAIT } from '../fixtures/sandbox-dashboard.js'
import { call, type Receiver, startReceiver } from '../fixtures/sandbox-receivers.js'

let sandbox: Sandbox
let receiver: Receiver
let base: string

useBrowser()
beforeAll(async () => {
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
  await sandbox?.close()
  await receiver?.close()
})

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
})
