// Fresh apps outside the repository that install the packed tarballs with plain npm, as a user following the root
// README's "Use it in your own app" does, then compile (tsc 5.4, 6 and 7, esbuild) and run under each module setting.
import { spawn } from 'node:child_process'
import { cpSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { installArgs } from '../../scripts/install-line.mjs'

const here = import.meta.dirname
const readme = resolve(here, '../../README.md')

/**
 * The TypeScript versions each app compiles under, installed once side by side (npm aliases). 5.4 is the oldest
 * the packages' types work with (core's types use `NoInfer`, new in 5.4); 7 is the native compiler (its binary
 * comes from the registry as an optional dependency, @typescript/typescript-<platform>).
 */
export const TYPESCRIPT = { oldest: '5.4.5', six: '6.0.3', seven: '7.0.2' } as const
const tsc = (version: keyof typeof TYPESCRIPT, ...args: string[]) => [
  'node',
  `../node_modules/typescript-${version}/bin/tsc`,
  '-p',
  '.',
  ...args,
]
// The oldest TypeScript type-checks, the newest one that takes the app's settings builds what runs.
const oldestThen7 = [tsc('oldest', '--noEmit'), tsc('seven')]

/** Each app: the folder under apps/, how it is built (if at all) and how it runs. */
export const APPS = {
  'esm-express': { build: [], run: ['node', 'server.js'] },
  'esm-express-queue': { build: [], run: ['node', 'server.js'] },
  'cjs-require': { build: [], run: ['node', 'index.js'] },
  // moduleResolution node10: removed in TypeScript 7 (TS5108); TypeScript 6 takes it, and this app's
  // `import * as express`, once told to ignore 6.0's deprecations.
  'ts-nest-commonjs': {
    build: [tsc('oldest', '--noEmit'), tsc('six', '--ignoreDeprecations', '6.0', '--esModuleInterop', 'false')],
    run: ['node', 'dist/main.js'],
  },
  'ts-node16-commonjs': { build: oldestThen7, run: ['node', 'dist/main.js'] },
  'ts-nodenext-esm': { build: oldestThen7, run: ['node', 'dist/main.js'] },
  'ts-bundler': {
    build: [
      ...oldestThen7,
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

/** The packages the apps use: the install line is `pnpm pack:all --for` these prints. */
export const APP_PACKAGES = ['express', 'redis', 'bullmq', 'testing']

/** The README's `npm install` line under "Use it in your own app", split into its arguments. */
export function readmeNpmInstall(): string[] {
  const text = readFileSync(readme, 'utf8')
  const section = text.slice(text.indexOf('## Use it in your own app'))
  const line = /^npm install (.+)$/m.exec(section)?.[1]
  if (!line) throw new Error('README.md has no `npm install` line under "## Use it in your own app"')
  return line.split(/\s+/)
}

/**
 * A fresh project in `dir`: package.json, then the install line `pnpm pack:all --for` prints for the apps'
 * packages, exactly; then, as a second command, what builds the apps (the TypeScript versions, types, esbuild).
 * Every app of apps/ is copied beside it.
 */
export async function installApps(dir: string, packs: string): Promise<Ran> {
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'payhooks-consumer', private: true }, null, 2)}\n`)
  const bin = join(dir, 'node_modules/.bin')
  const npm = ['npm', 'install', '--no-audit', '--no-fund', '--prefer-offline']
  const installed = await exec([...npm, ...installArgs(APP_PACKAGES, packs)], dir, bin, 300_000)
  if (installed.code !== 0) return installed
  const tools = [
    ...Object.entries(TYPESCRIPT).map(([name, version]) => `typescript-${name}@npm:typescript@${version}`),
    '@types/node@^20.19.0',
    '@types/express@^5.0.3',
    'esbuild@0.28.2',
  ]
  const built = await exec([...npm, '--save-dev', ...tools], dir, bin, 300_000)
  for (const app of Object.keys(APPS)) {
    cpSync(join(here, 'apps', app), join(dir, app), { recursive: true })
    if (app.startsWith('ts-')) cpSync(join(here, 'apps/ts-shared/receive.ts'), join(dir, app, 'src/receive.ts'))
  }
  return { code: built.code, output: `${installed.output}\n${built.output}` }
}

/**
 * Builds the app, then runs it: stops at the first step that fails, with its output. On the matrix's passes on other
 * Nodes (PAYHOOKS_MATRIX_PASS, scripts/test-matrix.mjs) the steps that only type-check (`--noEmit`) are left out: a
 * compiler's verdict does not depend on the Node it runs on, and the main pass gave it.
 */
export async function buildAndRun(dir: string, app: AppName): Promise<{ step: string } & Ran> {
  const bin = join(dir, 'node_modules/.bin')
  const { run } = APPS[app]
  const build: readonly (readonly string[])[] = APPS[app].build
  const again = process.env.PAYHOOKS_MATRIX_PASS === '1'
  for (const step of build.filter((command) => !(again && command.includes('--noEmit')))) {
    const built = await exec(step, join(dir, app), bin)
    if (built.code !== 0) return { step: step.join(' '), ...built }
  }
  return { step: run.join(' '), ...(await exec(run, join(dir, app), bin, 30_000)) }
}
