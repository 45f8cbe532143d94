// Every TypeScript and JavaScript snippet of these READMEs compiles as pasted: each one is type-checked
// on its own, as a module in the README's folder, against the built packages (run `pnpm build` first).
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import { basename, dirname, relative, resolve } from 'node:path'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'
import { runCli } from '../fixtures/cli-run.js'
import { unusedPort } from '../fixtures/sandbox-receivers.js'

const root = resolve(import.meta.dirname, '../..')
/** READMEs whose snippets are checked; `sections` limits a README to the snippets whose nearest heading is one of those. */
const READMES: { file: string; sections?: string[] }[] = [
  { file: 'README.md', sections: ['Quick start', 'Plain `node:http`'] },
  { file: 'packages/core/README.md' },
  { file: 'packages/express/README.md' },
  { file: 'packages/client/README.md' },
  { file: 'packages/postgres/README.md' },
  { file: 'packages/mysql/README.md' },
  { file: 'packages/otel/README.md' },
  { file: 'packages/hono/README.md' },
  { file: 'packages/sandbox/README.md' },
  { file: 'packages/board/README.md' },
  { file: 'packages/bullmq/README.md' },
  { file: 'packages/koa/README.md' },
  { file: 'packages/fastify/README.md' },
  { file: 'packages/lambda/README.md' },
  { file: 'packages/redis/README.md' },
  { file: 'packages/testing/README.md' },
  ...docsPages().map((file) => ({ file })),
]

/** The documentation site's hand-written pages (`docs/**\/*.md`), not the generated API reference. */
function docsPages(dir = resolve(root, 'docs')): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = resolve(dir, entry.name)
    if (entry.isDirectory()) {
      return ['api', 'node_modules', 'public'].includes(entry.name) || entry.name.startsWith('.') ? [] : docsPages(path)
    }
    return entry.name.endsWith('.md') ? [relative(root, path)] : []
  })
}

/**
 * Page sections whose snippets need what only an example installs (NestJS, a runtime's own types, a generated Prisma
 * client): each is checked as modules of that example's folder, with its types, in a program of its own. Without
 * `section`, the whole page.
 */
const IN_EXAMPLE: { file: string; section?: string; folder: string; options: ts.CompilerOptions }[] = [
  // Next to the Prisma client the tests generate (scripts/prisma-generate.mjs): `./generated/prisma/client.js`.
  { file: 'docs/guide/your-database.md', section: 'Prisma', folder: 'test/fixtures/prisma', options: {} },
  {
    file: 'docs/guide/your-database.md',
    section: 'Prisma on MySQL and MariaDB',
    folder: 'test/fixtures/prisma-mysql',
    options: {},
  },
  { file: 'packages/mysql/README.md', section: 'Prisma', folder: 'test/fixtures/prisma-mysql', options: {} },
  {
    file: 'docs/quick-start/nest.md',
    folder: 'examples/nest/src',
    options: { experimentalDecorators: true, emitDecoratorMetadata: true },
  },
  {
    file: 'docs/quick-start/other-runtimes.md',
    section: 'Bun',
    folder: 'examples/bun',
    options: { types: ['bun'], lib: ['lib.es2023.d.ts'] },
  },
  {
    file: 'docs/quick-start/other-runtimes.md',
    section: 'Deno',
    folder: 'examples/deno',
    options: { types: ['deno'] },
  },
  {
    file: 'docs/quick-start/other-runtimes.md',
    section: 'Cloudflare Workers',
    folder: 'examples/workers/src',
    options: { types: ['@cloudflare/workers-types'], lib: ['lib.es2023.d.ts'] },
  },
]

interface Snippet {
  file: string
  line: number
  lang: 'ts' | 'js'
  code: string
  section: string | undefined
}

/** The `IN_EXAMPLE` entry a snippet belongs to, if any. */
function placeOf(snippet: Snippet) {
  return IN_EXAMPLE.find(
    (entry) => entry.file === snippet.file && (entry.section === undefined || entry.section === snippet.section),
  )
}

/** Fenced ```ts and ```js blocks, list-indented ones included. */
function snippets({ file: readme, sections }: { file: string; sections?: string[] }): Snippet[] {
  const text = readFileSync(resolve(root, readme), 'utf8')
  const found: Snippet[] = []
  const fence = /^( *)```(ts|js)\n([\s\S]*?)^\1```$/gm
  for (const match of text.matchAll(fence)) {
    const indent = match[1] ?? ''
    const code = (match[3] ?? '')
      .split('\n')
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
      .join('\n')
    const before = text.slice(0, match.index)
    const section = [...before.matchAll(/^#{1,6} (.+)$/gm)].pop()?.[1]
    if (sections && !sections.includes(section ?? '')) continue
    const line = before.split('\n').length
    found.push({ file: readme, line, lang: match[2] as 'ts' | 'js', code, section })
  }
  return found
}

/** Type errors of `list`, each as `README.md:12: message`; the snippets are modules of `folder` (else their page's). */
function check(list: Snippet[], options: ts.CompilerOptions, folder?: string): string[] {
  const files = new Map<string, Snippet>()
  for (const snippet of list) {
    const name = resolve(
      root,
      folder ?? dirname(snippet.file),
      `${basename(snippet.file, '.md')}.snippet-${snippet.line}.${snippet.lang === 'ts' ? 'mts' : 'mjs'}`,
    )
    files.set(name, snippet)
  }
  const host = ts.createCompilerHost(options)
  // A program's `types` are looked up from its current folder: the example's, for the example's own types.
  if (folder) host.getCurrentDirectory = () => resolve(root, folder)
  const { getSourceFile, fileExists, readFile } = host
  host.fileExists = (name) => files.has(name) || fileExists.call(host, name)
  host.readFile = (name) => files.get(name)?.code ?? readFile.call(host, name)
  host.getSourceFile = (name, language, ...rest) => {
    const snippet = files.get(name)
    return snippet
      ? ts.createSourceFile(name, snippet.code, language, true)
      : getSourceFile.call(host, name, language, ...rest)
  }
  const program = ts.createProgram([...files.keys()], options, host)
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const snippet = diagnostic.file ? files.get(diagnostic.file.fileName) : undefined
    const where = snippet
      ? `${snippet.file}:${snippet.line + 1 + diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line}`
      : (diagnostic.file?.fileName ?? 'program')
    return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`
  })
}

const common: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  types: ['node'],
  noEmit: true,
  skipLibCheck: true,
}

describe('README and docs snippets', () => {
  const all = READMES.flatMap(snippets)

  it('finds the snippets, and the packages are built', () => {
    expect(all.filter((s) => s.lang === 'ts').length).toBeGreaterThanOrEqual(8)
    expect(all.filter((s) => s.file === 'README.md')).toHaveLength(2)
    expect(all.filter((s) => s.lang === 'js').length).toBeGreaterThanOrEqual(2)
    expect(existsSync(resolve(root, 'packages/core/dist/index.d.ts'))).toBe(true)
    for (const entry of IN_EXAMPLE) {
      if (existsSync(resolve(root, entry.file)))
        expect(
          all.filter((s) => placeOf(s) === entry),
          entry.folder,
        ).not.toEqual([])
    }
  })

  /** Each language's snippets: those of the pages' folders in one program, those of each example in its own. */
  function checkAll(lang: 'ts' | 'js', options: ts.CompilerOptions): string[] {
    const mine = all.filter((s) => s.lang === lang)
    return [
      ...check(
        mine.filter((s) => !placeOf(s)),
        options,
      ),
      ...IN_EXAMPLE.flatMap((entry) => {
        const placed = mine.filter((s) => placeOf(s) === entry)
        return placed.length === 0 ? [] : check(placed, { ...options, ...entry.options }, entry.folder)
      }),
    ]
  }

  it('TypeScript snippets type-check under strict', () => {
    expect(checkAll('ts', { ...common, strict: true })).toEqual([])
  }, 600_000) // one tsc program per example besides the pages': minutes when the machine is loaded

  it('JavaScript snippets resolve their imports and type-check as JavaScript', () => {
    expect(checkAll('js', { ...common, allowJs: true, checkJs: true })).toEqual([])
  }, 120_000)
})

describe('the Hono README', () => {
  it('serves on Node as pasted: a signed delivery to the running snippet is handled', async () => {
    const [snippet] = snippets({ file: 'packages/hono/README.md' })
    const file = resolve(root, 'packages/hono/README.snippet-run.mjs')
    const js = ts.transpileModule(snippet?.code ?? '', {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
    }).outputText
    await writeFile(file, js)
    const port = await unusedPort()
    const secret = 'whsec_hono_readme'
    const child = spawn(process.execPath, [file], {
      env: { PATH: process.env.PATH ?? '', PORT: String(port), WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk
    })
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk
    })
    const exited = new Promise<number | null>((done) => child.once('exit', done))
    try {
      const listening = await Promise.race([
        new Promise<boolean>((done) => {
          const poll = setInterval(() => {
            if (!output.includes('listening on')) return
            clearInterval(poll)
            done(true)
          }, 20)
          exited.then(() => clearInterval(poll))
        }),
        exited.then(() => false),
      ])
      expect(listening, `the snippet exited without serving:\n${output}`).toBe(true)
      const event = sampleEvent('transaction_settled')
      const { body, headers } = await signedDelivery(event, secret)
      const answer = await fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', body, headers })
      expect(answer.status).toBe(200)
      await expect.poll(() => output, { timeout: 10_000, interval: 20 }).toContain(String(event.event_id))
    } finally {
      child.kill()
      await exited
      await rm(file, { force: true })
    }
  })
})

describe("the top README's local workflow", () => {
  const text = readFileSync(resolve(root, 'README.md'), 'utf8')
  const section = text.slice(
    text.indexOf('## Local workflow'),
    text.indexOf('\n## ', text.indexOf('## Local workflow') + 1),
  )

  it('shows the manual clock, sandbox emit and sandbox advance, and each command it shows exists', async () => {
    for (const shown of [
      'pnpm payhooks sandbox --manual-clock',
      'pnpm payhooks sandbox emit ',
      'pnpm payhooks sandbox advance 1h',
    ]) {
      expect(section).toContain(shown)
    }
    // The command words of each `pnpm payhooks …` shown: up to two, before the first argument or flag.
    const commands = new Set<string>()
    for (const [, rest = ''] of section.matchAll(/pnpm payhooks ([^\n#`]*)/g)) {
      const words: string[] = []
      for (const word of rest.split(' ')) {
        if (!/^[a-z]+(-[a-z]+)*$/.test(word) || words.length === 2) break
        words.push(word)
      }
      if (words.length > 0) commands.add(words.join(' '))
    }
    expect(commands.size).toBeGreaterThanOrEqual(5)
    for (const command of commands) {
      const help = await runCli([...command.split(' '), '--help'])
      expect([command, help.code, help.stderr]).toEqual([command, 0, ''])
    }
  }, 120_000) // a CLI process per command
})
