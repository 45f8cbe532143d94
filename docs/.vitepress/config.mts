import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { type DefaultTheme, defineConfig } from 'vitepress'

const docs = resolve(import.meta.dirname, '..')

/** The guide's pages in reading order; a page is listed once its file exists (they are written in parallel). */
const GUIDE: { text: string; pages: string[] }[] = [
  { text: 'Introduction', pages: ['guide/introduction'] },
  {
    text: 'Quick start',
    pages: ['express', 'koa', 'hono', 'fastify', 'next', 'nest', 'lambda', 'node-http', 'other-runtimes'].map(
      (name) => `quick-start/${name}`,
    ),
  },
  {
    text: 'Guides',
    pages: ['stores', 'queue-mode', 'schemas', 'ordering', 'testing', 'upgrading'].map((name) => `guide/${name}`),
  },
  {
    text: 'Operating',
    pages: ['production', 'operating', 'recovery', 'secret-rotation', 'errors'].map((name) => `guide/${name}`),
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
  items: pages.filter(exists).map((page) => ({ text: title(page), link: `/${page}` })),
}))
  .filter((group) => group.items.length > 0)
  .concat({ text: 'API', items: [{ text: 'API reference', link: '/api/' }] })

/** The packages in the order the API sidebar lists them. */
const PACKAGES = [
  'core',
  'express',
  'koa',
  'hono',
  'fastify',
  'lambda',
  'redis',
  'postgres',
  'bullmq',
  'otel',
  'testing',
  'client',
  'sandbox',
  'board',
  'cli',
]

/**
 * TypeDoc's sidebar (docs/api/typedoc-sidebar.json) regrouped: one group per package, its subpath entries
 * (`@payhooks/core/node`) inside it.
 */
function apiSidebar(): DefaultTheme.SidebarItem[] {
  const file = resolve(docs, 'api/typedoc-sidebar.json')
  if (!existsSync(file)) return []
  const items: DefaultTheme.SidebarItem[] = JSON.parse(readFileSync(file, 'utf8'))
  const named = (name: string) => items.filter((item) => item.text === name)
  const known = PACKAGES.filter((name) => named(name).length > 0)
  const others = [...new Set(items.map((item) => item.text ?? ''))].filter((name) => !known.includes(name))
  return [...known, ...others].map((name) => {
    const parts = named(name)
    const main = parts.find((item) => item.link)
    const subpaths = parts
      .filter((item) => !item.link)
      .flatMap((item) => item.items ?? [])
      .map((item) => ({ ...item, text: `@payhooks/${name}/${item.text}` }))
    return {
      text: `@payhooks/${name}`,
      link: main?.link,
      collapsed: name !== 'core',
      items: [...(main?.items ?? []), ...subpaths],
    }
  })
}

export default defineConfig({
  title: 'payhooks',
  description: "Receive the payment service's webhooks in the Node app you already run: verified, typed, handled once.",
  cleanUrls: true,
  lastUpdated: false,
  // The home page's buttons lead only to pages that exist (the guide's pages are written in parallel).
  transformPageData(pageData) {
    const hero = pageData.frontmatter.hero as { actions?: { link: string }[] } | undefined
    if (pageData.relativePath === 'index.md' && hero?.actions) {
      hero.actions = hero.actions.filter(({ link }) => exists(link.endsWith('/') ? `${link}index` : link))
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
      '/api/': [{ text: 'Guide', items: [{ text: 'Back to the guide', link: '/' }] }, ...apiSidebar()],
      '/': guideSidebar,
    },
    search: { provider: 'local' },
    outline: { level: [2, 3] },
  },
  vite: {
    // The local search index and the API pages make a few large chunks: known, and not a problem for a docs site.
    build: { chunkSizeWarningLimit: 5000 },
  },
})
