import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { type DefaultTheme, defineConfig } from 'vitepress'

const docs = resolve(import.meta.dirname, '..')

/** The guide's pages in reading order; a page is listed once its file exists (they are written in parallel). */
const GUIDE: { text: string; pages: string[] }[] = [
  { text: 'Start here', pages: ['guide/introduction'] },
  {
    text: 'Quick start',
    pages: ['express', 'koa', 'hono', 'fastify', 'next', 'nest', 'lambda', 'node-http', 'other-runtimes'].map(
      (name) => `quick-start/${name}`,
    ),
  },
  {
    text: 'Guides',
    pages: ['stores', 'your-database', 'writing-a-store', 'queue-mode', 'schemas', 'ordering', 'testing', 'prove', 'upgrading'].map((name) => `guide/${name}`),
  },
  {
    text: 'Operating',
    pages: ['production', 'capacity', 'operating', 'alerts', 'journal', 'recovery', 'secret-rotation', 'errors'].map((name) => `guide/${name}`),
  },
  { text: 'Reference', pages: ['contract'] },
]

/** The page's first `# ` heading, else its slug. */
function title(page: string): string {
  const text = readFileSync(resolve(docs, `${page}.md`), 'utf8')
  return /^# (.+)$/m.exec(text)?.[1]?.replace(/`/g, '').trim() ?? page
}

const exists = (page: string) => existsSync(resolve(docs, `${page}.md`))

const guideSidebar: DefaultTheme.SidebarItem[] = GUIDE.map(({ text, pages }) => ({
  text,
  // Within its group a page needs no "Quick start: " before its framework's name.
  items: pages
    .filter(exists)
    .map((page) => ({ text: title(page).replace(new RegExp(`^${text}: `, 'i'), ''), link: `/${page}` })),
}))
  .filter((group) => group.items.length > 0)
  .concat({ text: 'API', items: [{ text: 'API reference', link: '/api/' }] })

/**
 * TypeDoc's sidebar (docs/api/typedoc-sidebar.json: one entry per package entry point, `@payhooks/core`,
 * `@payhooks/core/node`, ...) grouped by package, in TypeDoc's order (docs/.vitepress/typedoc.mjs).
 */
function apiSidebar(): DefaultTheme.SidebarItem[] {
  const file = resolve(docs, 'api/typedoc-sidebar.json')
  if (!existsSync(file)) return []
  const items: DefaultTheme.SidebarItem[] = JSON.parse(readFileSync(file, 'utf8'))
  const packageOf = (item: DefaultTheme.SidebarItem) => item.text?.split('/')[1] ?? ''
  return [...new Set(items.map(packageOf))]
    .map((name) => {
      const main = items.find((item) => item.text === `@payhooks/${name}`)
      const subpaths = items.filter((item) => packageOf(item) === name && item !== main)
      return {
        text: `@payhooks/${name}`,
        link: main?.link,
        ...(subpaths.length > 0 ? { collapsed: true, items: subpaths } : {}),
      }
    })
}

export default defineConfig({
  title: 'payhooks',
  description: "Receive the payment service's webhooks in the Node app you already run: verified, typed, handled once.",
  cleanUrls: true,
  head: [['link', { rel: 'icon', type: 'image/svg+xml', href: '/favicon.svg' }]],
  lastUpdated: false,
  // The home page's buttons lead only to pages that exist (the guide's pages are written in parallel).
  transformPageData(pageData) {
    const hero = pageData.frontmatter.hero as { actions?: { link: string }[] } | undefined
    if (pageData.relativePath === 'index.md' && hero?.actions) {
      hero.actions = hero.actions.filter(({ link }) => exists(link.slice(1).replace(/\/$/, '/index')))
    }
  },
  themeConfig: {
    nav: [
      { text: 'Guide', link: exists('guide/introduction') ? '/guide/introduction' : '/contract' },
      ...(exists('quick-start/express') ? [{ text: 'Quick start', link: '/quick-start/express' }] : []),
      { text: 'API', link: '/api/' },
      { text: 'Contract', link: '/contract' },
    ],
    sidebar: {
      '/api/': [{ text: 'Packages', link: '/api/', items: apiSidebar() }],
      '/': guideSidebar,
    },
    search: {
      provider: 'local',
      options: {
        miniSearch: {
          options: {
            // Words a reader may use for one thing, indexed and searched as one term: "handler hangs", "hanging
            // handler" and "stuck handler" find the hung-handlers section as "hung handler" does. Sent to the page
            // as its source text, as boostDocument below: it may use nothing from this file.
            processTerm(term: string) {
              const lower = term.toLowerCase()
              return /^(hang|hangs|hanging|hung|stuck)$/.test(lower) ? 'hung' : lower
            },
          },
          searchOptions: {
            // The guides before the API reference: an API entry ranks high only for the term that is its name as
            // an identifier (`maxEventAgeMs`, `leaseMs` open their entries first); plain words ("rotate secret",
            // "replay") find the guides. VitePress sends this function to the page as its source text: it may use
            // nothing from this file.
            boostDocument(id: string, term: string, stored?: Record<string, unknown>) {
              if (!id.startsWith('/api/')) return 1
              const title = String(stored?.title ?? '')
              const identifier = /[a-z][A-Z]/.test(title) && title.toLowerCase().replace(/[^a-z0-9]/g, '') === term
              return identifier ? 2 : 0.3
            },
          },
        },
      },
    },
    outline: { level: [2, 3] },
  },
  vite: {
    // The local search index and the API pages make a few large chunks: known, and not a problem for a docs site.
    build: { chunkSizeWarningLimit: 5000 },
  },
})
