#!/usr/bin/env node
// Runs every bench/*.bench.mjs in turn (or those whose name contains an argument), each in its own process.
import { spawnSync } from 'node:child_process'
import { readdirSync } from 'node:fs'

const dir = import.meta.dirname
const filters = process.argv.slice(2)
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort()
let failed = 0
for (const file of files) {
  console.log(`\n## ${file}\n`)
  const { status } = spawnSync(process.execPath, ['--expose-gc', `${dir}/${file}`], { stdio: 'inherit' })
  if (status !== 0) failed++
}
process.exit(failed ? 1 : 0)
