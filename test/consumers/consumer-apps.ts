// Fresh apps outside the repository that install the packed tarballs with plain npm, as a user following the root
// README's "Use it in your own app" does, then compile (tsc, esbuild) and run under each module setting.
import { spawn } from 'node:child_process'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

const here = import.meta.dirname
const readme = resolve(here, '../../README.md')

/** Each app: the folder under apps/, how it is built (if at all) and how it runs. */
export const APPS = {
  'esm-express': { build: [], run: ['node', 'server.js'] },
  'cjs-require': { build: [], run: ['node', 'index.js'] },
  'ts-nest-commonjs': { build: [['tsc', '-p', '.']], run: ['node', 'dist/main.js'] },
  'ts-node16-commonjs': { build: [['tsc', '-p', '.']], run: ['node', 'dist/main.js'] },
  'ts-nodenext-esm': { build: [['tsc', '-p', '.']], run: ['node', 'dist/main.js'] },
  'ts-bundler': {
    build: [
      ['tsc', '-p', '.'],
      [
        'esbuild',
        'src/main.ts',
        '--bundle',
        '--platform=node',
        '--format=cjs',
        '--outfile=dist/main.cjs',
        '--log-level=warning',
      ],
    ],
    run: ['node', 'dist/main.cjs'],
  },
} as const satisfies Record<string, { build: readonly (readonly string[])[]; run: readonly string[] }>
export type AppName = keyof typeof APPS

export interface Ran {
  code: number | null
  output: string
}

/** Runs a command to its end (npm, tsc, node), with the app's node_modules/.bin first on PATH. */
export function exec(command: readonly string[], cwd: string, bin: string, timeoutMs = 120_000): Promise<Ran> {
  return new Promise((done, fail) => {
    const [file, ...args] = command as [string, ...string[]]
    const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, npm_config_update_notifier: 'false' }
    const child = spawn(file, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'], timeout: timeoutMs })
    let output = ''
    child.stdout.on('data', (chunk) => (output += chunk))
    child.stderr.on('data', (chunk) => (output += chunk))
    child.on('error', fail)
    child.on('close', (code) => done({ code, output }))
  })
}

/**
 * The README's npm install line for your own app, its `../payhooks/packs/` pointed at `packs`: the commands a
 * user copies. The test adds what its apps need besides (TypeScript, types, esbuild, @payhooks/testing).
 */
export function readmeNpmInstall(packs: string): string[] {
  const text = readFileSync(readme, 'utf8')
  const section = text.slice(text.indexOf('## Use it in your own app'))
  const line = /^npm install (.+)$/m.exec(section)?.[1]
  if (!line) throw new Error('README.md has no `npm install` line under "## Use it in your own app"')
  return line.split(/\s+/).map((arg) => arg.replace('../payhooks/packs/', `${packs}/`))
}

/** A fresh project in `dir` (package.json, then `npm install`), with every app of apps/ copied beside it. */
export async function installApps(dir: string, packs: string): Promise<Ran> {
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'payhooks-consumer', private: true }, null, 2)}\n`)
  const extras = [
    join(packs, 'payhooks-testing.tgz'),
    'typescript@5.9.3',
    '@types/node@^20.19.0',
    '@types/express@^5.0.3',
    'esbuild@0.28.2',
  ]
  const npm = ['npm', 'install', '--no-audit', '--no-fund', '--prefer-offline', ...readmeNpmInstall(packs), ...extras]
  const installed = await exec(npm, dir, join(dir, 'node_modules/.bin'), 300_000)
  for (const app of Object.keys(APPS)) {
    cpSync(join(here, 'apps', app), join(dir, app), { recursive: true })
    if (app.startsWith('ts-')) cpSync(join(here, 'apps/ts-shared/receive.ts'), join(dir, app, 'src/receive.ts'))
  }
  return installed
}

/** Builds the app, then runs it: stops at the first step that fails, with its output. */
export async function buildAndRun(dir: string, app: AppName): Promise<{ step: string } & Ran> {
  const bin = join(dir, 'node_modules/.bin')
  const { build, run } = APPS[app]
  for (const step of build) {
    const built = await exec(step, join(dir, app), bin)
    if (built.code !== 0) return { step: step.join(' '), ...built }
  }
  return { step: run.join(' '), ...(await exec(run, join(dir, app), bin, 30_000)) }
}
