#!/usr/bin/env node
// `pnpm docs:build`: the API reference (TypeDoc, from the packages' TSDoc, into docs/api/), then the site (VitePress,
// into docs/.vitepress/dist). Fails on any warning of either: a broken {@link}, a dead link, an oversized chunk.
// `--api-only` (what `pnpm docs` runs before `vitepress dev`): the API reference alone.
import { spawn } from 'node:child_process'
import { join, resolve } from 'node:path'
import { Application } from 'typedoc'
import options from '../docs/.vitepress/typedoc.mjs'

const root = resolve(import.meta.dirname, '..')
const started = Date.now()

const app = await Application.bootstrapWithPlugins(options)
const project = await app.convert()
if (!project) process.exit(1)
app.validate(project)
if (app.logger.hasErrors() || app.logger.hasWarnings()) {
  console.error('docs: TypeDoc warned (fix the TSDoc above): the API reference is not written')
  process.exit(1)
}
await app.generateOutputs(project)
if (app.logger.hasErrors() || app.logger.hasWarnings()) process.exit(1)
console.log(`docs: API reference in docs/api (${((Date.now() - started) / 1000).toFixed(1)} s)`)
if (process.argv.includes('--api-only')) process.exit(0)

// VitePress fails on a dead link by itself; other warnings (Vite's `(!)` lines, `[vitepress] warning`) only print.
const vitepress = spawn(join(root, 'node_modules/.bin/vitepress'), ['build', 'docs'], {
  cwd: root,
  stdio: ['ignore', 'pipe', 'pipe'],
})
const warnings = []
for (const stream of [vitepress.stdout, vitepress.stderr]) {
  stream.setEncoding('utf8')
  stream.on('data', (chunk) => {
    process.stdout.write(chunk)
    for (const line of chunk.split('\n')) if (/\(!\)|\bwarn(ing)?\b/i.test(line)) warnings.push(line.trim())
  })
}
const code = await new Promise((done) => vitepress.on('close', done))
if (code !== 0) process.exit(code ?? 1)
if (warnings.length > 0) {
  console.error(`docs: the build warned:\n${warnings.join('\n')}`)
  process.exit(1)
}
console.log(`docs: site in docs/.vitepress/dist (${((Date.now() - started) / 1000).toFixed(1)} s in all)`)
