#!/usr/bin/env node
// The CommonJS build beside the ES one: tsc compiles each dual package's src into dist/cjs (tsconfig.cjs.json:
// module CommonJS), and dist/cjs/package.json says "type": "commonjs" so Node and TypeScript read those .js and
// .d.ts files as CommonJS inside a "type": "module" package. Incremental, like `tsc --build`.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { publishedPackages, root } from './packages.mjs'

const tsc = spawnSync(
  process.execPath,
  [join(root, 'node_modules/typescript/bin/tsc'), '--build', 'tsconfig.cjs.json'],
  {
    cwd: root,
    stdio: 'inherit',
  },
)
if (tsc.status !== 0) process.exit(tsc.status ?? 1)
for (const { dir, dual } of publishedPackages()) {
  if (!dual) continue
  // Written only when missing or different: CI packs (lint) while the release dry run builds, and a file being
  // rewritten could be packed empty.
  const file = join(dir, 'dist/cjs/package.json')
  const text = '{ "type": "commonjs" }\n'
  if (existsSync(file) && readFileSync(file, 'utf8') === text) continue
  mkdirSync(join(dir, 'dist/cjs'), { recursive: true })
  writeFileSync(file, text)
}
