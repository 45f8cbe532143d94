#!/usr/bin/env node
// A package's own `build` script (so `pnpm -r build` and `pnpm --filter <package> build` work from a fresh clone,
// in whatever order pnpm runs them): `tsc --build` of the package's ES modules and, for a dual package, its
// CommonJS copy (tsconfig.cjs.json, then dist/cjs/package.json as scripts/build-cjs.mjs writes it), each building
// the projects it references first. The root's `pnpm build` does the same for every package at once.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

const dir = process.cwd()
const configs = ['tsconfig.json', 'tsconfig.dashboard.json', 'tsconfig.client.json', 'tsconfig.cjs.json'].filter(
  (file) => existsSync(join(dir, file)),
)
const tsc = join(import.meta.dirname, '..', 'node_modules/typescript/bin/tsc')
const built = spawnSync(process.execPath, [tsc, '--build', ...configs], { cwd: dir, stdio: 'inherit' })
if (built.status !== 0) process.exit(built.status ?? 1)
if (configs.includes('tsconfig.cjs.json')) {
  mkdirSync(join(dir, 'dist/cjs'), { recursive: true })
  writeFileSync(join(dir, 'dist/cjs/package.json'), '{ "type": "commonjs" }\n')
}
