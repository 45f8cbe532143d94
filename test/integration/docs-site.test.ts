// The documentation site, built (`pnpm docs:build`; `pnpm test` builds it first when this file runs), served as
// static files and opened in a real headless Chromium (Debian's /usr/bin/chromium, driven by playwright-core; never a
// downloaded browser): the home page, a guide page, the service contract and an API page show their content with no
// console error, and the local search finds `maxEventAgeMs` on the API page of @payhooks/core.
// DOCS_SITE_SCREENSHOTS=<folder> saves each page (docs-home.png, docs-guide.png, docs-api.png, docs-search.png).
import { existsSync, readFileSync, statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join, resolve } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium } from '../fixtures/chromium.js'

// The API page of @payhooks/core is 1.5 MB of HTML (its module chunk as much again): about 2 s to load and hydrate on a
// quiet 2-core machine, and once over 30 s under CI's main pass. Every wait on a page allows 60 s, each test 3 minutes.
const PAGE_MS = 60_000
const WAIT = { timeout: PAGE_MS }
const SLOW = 180_000
const SHOTS = process.env.DOCS_SITE_SCREENSHOTS
const docs = resolve(import.meta.dirname, '../../docs')
const dist = join(docs, '.vitepress/dist')
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript',
  '.css': 'text/css',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
}

let browser: Browser
let server: Server
let base: string

/** The built file for a clean URL, as a static host serves VitePress's `cleanUrls`: /contract → contract.html. */
function fileFor(pathname: string): string | undefined {
  const path = join(dist, decodeURIComponent(pathname))
  if (!path.startsWith(dist)) return undefined
  const candidates = pathname.endsWith('/') ? [join(path, 'index.html')] : [path, `${path}.html`]
  return candidates.find((file) => existsSync(file) && statSync(file).isFile())
}

beforeAll(async () => {
  if (!existsSync(join(dist, 'index.html'))) {
    throw new Error('docs/.vitepress/dist is missing: run `pnpm docs:build` (or this test through `pnpm test`)')
  }
  server = createServer(async (request, response) => {
    const file = fileFor(new URL(request.url ?? '/', 'http://localhost').pathname)
    response.writeHead(file ? 200 : 404, { 'content-type': TYPES[extname(file ?? '.html')] ?? 'text/plain' })
    response.end(await readFile(file ?? join(dist, '404.html')))
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  browser = await launchChromium()
}, SLOW)

afterAll(async () => {
  await browser?.close()
  await new Promise((done) => server?.close(done))
})

/**
 * A new page at `path`, once VitePress's app has mounted on it, and what it logs as an error
 * (console errors, uncaught exceptions, failed requests). A load that times out says which requests were still open.
 */
async function open(path: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
  page.setDefaultTimeout(PAGE_MS)
  page.setDefaultNavigationTimeout(PAGE_MS)
  const errors: string[] = []
  const pending = new Set<string>()
  page.on('request', (request) => pending.add(request.url()))
  page.on('requestfinished', (request) => pending.delete(request.url()))
  page.on('requestfailed', (request) => pending.delete(request.url()))
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text())
  })
  page.on('pageerror', (error) => errors.push(error.message))
  page.on('requestfailed', (request) => errors.push(`${request.url()}: ${request.failure()?.errorText}`))
  page.on('response', (response) => {
    if (response.status() >= 400) errors.push(`${response.url()}: ${response.status()}`)
  })
  try {
    await page.goto(`${base}${path}`, { waitUntil: 'domcontentloaded' })
    // Hydrated: Vue marks the element it mounted on, and only then does a click on the search button open it.
    await page.waitForFunction(() => '__vue_app__' in (document.querySelector('#app') ?? {}))
  } catch (error) {
    throw new Error(`${path} did not load; requests still open: ${[...pending].join(', ') || 'none'}`, { cause: error })
  }
  return { page, errors }
}

/** The home page with `query` typed into the local search: its results, and their links in order. */
async function search(query: string) {
  const { page, errors } = await open('/')
  await page.locator('.VPNavBar').getByRole('button', { name: 'Search' }).click()
  const input = page.locator('.VPLocalSearchBox input')
  await input.waitFor(WAIT)
  await input.fill(query)
  const results = page.locator('.VPLocalSearchBox .results a')
  await expect.poll(() => results.count(), WAIT).toBeGreaterThan(0)
  const hrefs = await results.evaluateAll((links) => links.map((link) => link.getAttribute('href') ?? ''))
  return { page, errors, results, hrefs }
}

async function shot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `docs-${name}.png`) })
}

/** The first `# ` heading of the page's markdown source, as the site shows it (code spans as text). */
function heading(pathname: string): string {
  const slug = pathname.replace(/^\//, '').replace(/\/$/, '/index') || 'index'
  const text = readFileSync(join(docs, `${slug}.md`), 'utf8')
  return (/^# (.+)$/m.exec(text)?.[1] ?? '').replace(/`/g, '')
}

describe('documentation site', () => {
  it('the home page says what payhooks is and leads to the guide, whose page shows its heading', {
    timeout: SLOW,
  }, async () => {
    const { page, errors } = await open('/')
    await expect.poll(() => page.locator('.VPHero .name').textContent(), WAIT).toBe('payhooks')
    expect(await page.locator('.VPHero .text').textContent()).toBe("Receive the payment service's webhooks")
    const features = await page.locator('.VPFeature .title').allTextContents()
    expect(features).toContain('Verified over the raw bytes')
    expect(features).toContain('Dead letters and replay')
    // Every button leads to a page that exists (the config drops those whose page is not written yet).
    const buttons = await page.locator('.VPHero .actions a').all()
    const hrefs = await Promise.all(buttons.map(async (link) => (await link.getAttribute('href')) ?? ''))
    expect(hrefs).toEqual(expect.arrayContaining(['/api/', '/contract']))
    for (const href of hrefs) expect(fileFor(href), href).toBeDefined()
    await shot(page, 'home')

    // The nav's Guide: the introduction, or the contract while the guide's pages are not written.
    await page.locator('.VPNavBar').getByRole('link', { name: 'Guide', exact: true }).click()
    await page.locator('.vp-doc h1').waitFor(WAIT)
    const pathname = new URL(page.url()).pathname
    expect(pathname).not.toBe('/')
    expect(await page.locator('.vp-doc h1').textContent()).toContain(heading(pathname))
    // The sidebar lists the guide's pages and the contract.
    await expect
      .poll(() => page.locator('.VPSidebar a').allTextContents(), WAIT)
      .toContain('Payment Service: Authorization and Webhooks Specification')
    await shot(page, 'guide')
    expect(errors).toEqual([])
    await page.close()
  })

  it('ships the service contract: the spec text, its sections as headings', { timeout: SLOW }, async () => {
    const { page, errors } = await open('/contract')
    await page.locator('.vp-doc h1').waitFor(WAIT)
    expect(await page.locator('.vp-doc h1').textContent()).toContain(
      'Payment Service: Authorization and Webhooks Specification',
    )
    expect(await page.locator('.vp-doc h3').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('6.2 Verification')]),
    )
    expect(errors).toEqual([])
    await page.close()
  })

  it('the API page of @payhooks/core documents maxEventAgeMs', { timeout: SLOW }, async () => {
    const { page, errors } = await open('/api/core/')
    await page.locator('.vp-doc h1').waitFor(WAIT)
    expect(await page.locator('.vp-doc h1').textContent()).toContain('@payhooks/core')
    // WebhooksOptions' entry: its heading, its declaration, what it does and its default.
    const entry = page.locator('.vp-doc h5', { hasText: /^maxEventAgeMs\?/ }).first()
    const text = await entry.evaluate((heading) => {
      let text = ''
      for (let node = heading.nextElementSibling; node && node.tagName !== 'H5'; node = node.nextElementSibling) {
        text += `${node.textContent}\n`
      }
      return text
    })
    expect(text).toContain('maxEventAgeMs?: number')
    expect(text).toContain('422 stale_event')
    expect(text).toMatch(/Default[\s\u200b]+the store's retentionMs/) // the heading's anchor is a zero-width space
    // The sidebar groups the packages, each linking to its page.
    await expect.poll(() => page.locator('.VPSidebar a').allTextContents(), WAIT).toContain('@payhooks/redis')
    await entry.evaluate((heading) => window.scrollBy(0, heading.getBoundingClientRect().top - 90)) // below the nav bar
    await shot(page, 'api')
    expect(errors).toEqual([])
    await page.close()
  })

  it('the search ranks the guides above the API reference: "rotate secret" finds a guide first', {
    timeout: SLOW,
  }, async () => {
    const { page, errors, hrefs } = await search('rotate secret')
    expect(hrefs[0]).toMatch(/^\/guide\//)
    expect(errors).toEqual([])
    await page.close()
  })

  it.each(['hung handler', 'handler hangs', 'handler hanging', 'stuck handler'])(
    'the search finds the hung-handlers section for "%s"',
    { timeout: SLOW },
    async (query) => {
      const { page, errors, hrefs } = await search(query)
      expect(hrefs.slice(0, 3)).toContain('/guide/operating#hung-handlers')
      expect(errors).toEqual([])
      await page.close()
    },
  )

  it('shows every line of code whole at 1,280 px: long lines wrap, no block hides a part of its lines', {
    timeout: SLOW,
  }, async () => {
    // The introduction's install line is one of the longest lines in the guides.
    const { page, errors } = await open('/guide/introduction')
    await page.locator('.vp-doc h1').waitFor(WAIT)
    const blocks = await page
      .locator('.vp-doc div[class*="language-"] pre')
      .evaluateAll((pres) =>
        pres.map((pre) => ({ scroll: pre.scrollWidth, client: pre.clientWidth, text: pre.textContent ?? '' })),
      )
    expect(blocks.some(({ text }) => text.split('\n').some((line) => line.length > 100))).toBe(true)
    for (const { scroll, client, text } of blocks) expect(scroll, text.slice(0, 80)).toBeLessThanOrEqual(client + 1)
    expect(errors).toEqual([])
    await page.close()
  })

  it('the search finds maxEventAgeMs, and its result opens the API page of @payhooks/core', {
    timeout: SLOW,
  }, async () => {
    const { page, errors, results, hrefs } = await search('maxEventAgeMs')
    // The first result is WebhooksOptions' entry, on the API page of @payhooks/core.
    expect(hrefs[0]).toMatch(/^\/api\/core\/#maxeventagems/)
    await shot(page, 'search')
    await results.first().click()
    await expect.poll(() => new URL(page.url()).pathname, WAIT).toBe('/api/core/')
    await page.locator('.vp-doc h1').waitFor(WAIT)
    expect(await page.locator('.vp-doc h1').textContent()).toContain('@payhooks/core')
    const hash = new URL(page.url()).hash
    expect(await page.locator(`.vp-doc h5${hash}`).textContent()).toMatch(/^maxEventAgeMs\?/)
    expect(errors).toEqual([])
    await page.close()
  })
})
