#!/usr/bin/env node
// `pnpm pack:all [folder] [--for express,redis]`: builds every published package (ES modules and CommonJS), then
// writes one tarball per package into folder (default packs/), named without its version (packs/payhooks-core.tgz).
// `pnpm pack` writes the package.json that `pnpm publish` would: catalog: and workspace: ranges resolved to real ones.
// With --for, it then prints the `npm install` line for an app using those packages (scripts/install-line.mjs).
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, renameSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { installArgs } from './install-line.mjs'
import { publishedPackages, root } from './packages.mjs'

export async function packAll(folder) {
  const run = (args) => spawnSync(args[0], args.slice(1), { cwd: root, stdio: 'inherit' }).status
  if (run([process.execPath, join(root, 'node_modules/typescript/bin/tsc'), '--build']) !== 0) {
    throw new Error('tsc --build failed')
  }
  if (run([process.execPath, join(root, 'scripts/build-cjs.mjs')]) !== 0) throw new Error('the CommonJS build failed')
  mkdirSync(folder, { recursive: true })
  const packages = publishedPackages()
  // Two at a time: each pnpm pack is a process of its own, and CI has two cores.
  const queue = [...packages]
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) await pack(next, folder)
  }
  await Promise.all([worker(), worker()])
  return packages.map((p) => ({ ...p, tarball: join(folder, p.file) }))
}

function pack({ dir, name, version, file }, folder) {
  const staged = join(folder, `.${file}.d`)
  rmSync(staged, { recursive: true, force: true })
  return new Promise((done, fail) => {
    const child = spawn('pnpm', ['pack', '--pack-destination', staged], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    let stderr = ''
    child.stderr.on('data', (chunk) => (stderr += chunk))
    child.on('error', fail)
    child.on('exit', (code) => {
      if (code !== 0) return fail(new Error(`pnpm pack failed in ${dir}:\n${stderr}`))
      renameSync(join(staged, `${name.replace(/^@/, '').replace('/', '-')}-${version}.tgz`), join(folder, file))
      rmSync(staged, { recursive: true, force: true })
      done()
    })
  })
}

if (process.argv[1] === import.meta.filename) {
  const { values, positionals } = parseArgs({ options: { for: { type: 'string' } }, allowPositionals: true })
  const folder = resolve(positionals[0] ?? join(root, 'packs'))
  const wanted = values.for?.split(',').filter(Boolean)
  if (wanted) installArgs(wanted, folder) // an unknown name fails before the build
  const packed = await packAll(folder)
  if (wanted) {
    console.log('\nIn your app, install them with:\n')
    console.log(`npm install ${installArgs(wanted, folder).join(' ')}`)
  } else for (const { tarball } of packed) console.log(tarball)
}
