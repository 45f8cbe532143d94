#!/usr/bin/env node
// Bun, Deno and workerd (through Miniflare) are ~370 MB that only test/runtimes/runtimes.test.ts uses (and Node 22
// and 24, ~250 MB, the test matrix's: scripts/test-matrix.mjs), so they are
// test/runtimes' own pnpm workspace (package.json, pnpm-lock.yaml) rather than the repository's: the demo's
// `pnpm install` does not fetch them. `pnpm test` and `pnpm typecheck` install them here, once, from that lockfile.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const dir = join(import.meta.dirname, '..', 'test', 'runtimes')

/** Installs test/runtimes' packages unless its node_modules already holds its lockfile; exits the process on failure. */
export function installRuntimeDeps() {
  const lockfile = join(dir, 'pnpm-lock.yaml')
  const installed = join(dir, 'node_modules', '.pnpm', 'lock.yaml')
  if (existsSync(installed) && readFileSync(installed, 'utf8') === readFileSync(lockfile, 'utf8')) return
  console.log(
    'Installing Bun, Deno, workerd and Node 22 and 24 for the runtime tests and the test matrix (test/runtimes, once)',
  )
  const install = spawnSync('pnpm', ['install', '--frozen-lockfile', '--prefer-offline'], {
    cwd: dir,
    encoding: 'utf8',
  })
  if (install.status !== 0) {
    console.error(
      `pnpm install in test/runtimes failed:\n${install.stdout ?? ''}${install.stderr ?? ''}${install.error ?? ''}`,
    )
    process.exit(1)
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) installRuntimeDeps()
