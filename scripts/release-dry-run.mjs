#!/usr/bin/env node
// `pnpm publish -r --dry-run` as `changeset publish` would run it, nothing sent: prints one line per package that
// would be published, and npm's whole output (every file of every tarball) only when it fails.
import { spawnSync } from 'node:child_process'
import { publishedPackages } from './packages.mjs'

const result = spawnSync('pnpm', ['publish', '-r', '--dry-run', '--no-git-checks'], { encoding: 'utf8' })
const output = `${result.stdout ?? ''}${result.stderr ?? ''}`
if (result.status !== 0) {
  process.stdout.write(output)
  console.error(`release dry run failed (exit ${result.status ?? result.signal})`)
  process.exit(1)
}
const packed = output.split('\n').filter((line) => line.startsWith('+ @payhooks/'))
const expected = publishedPackages().map(({ name, version }) => `${name}@${version}`)
const missing = expected.filter((name) => !packed.includes(`+ ${name}`))
if (missing.length > 0) {
  process.stdout.write(output)
  console.error(`release dry run: not packed: ${missing.join(', ')}`)
  process.exit(1)
}
console.log(
  `release dry run: ${packed.length} packages would be published (${packed.map((l) => l.slice(2)).join(', ')})`,
)
