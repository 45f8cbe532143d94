#!/usr/bin/env node
// `pnpm lint` runs this after Biome: packs every published package as `pnpm pack:all` does, then checks each
// tarball with publint (package.json against the files it ships) and Are the Types Wrong (every entry point's types
// and JavaScript resolved as node10, node16 from CommonJS and from ESM, and bundler). Fails on any problem.
// PAYHOOKS_CONSUMER_PACKS=<folder>: the tarballs are written there and kept, for the consumer test to install (CI
// packs once for both).
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkPackage, createPackageFromTarballData } from '@arethetypeswrong/core'
import { publint } from 'publint'
import { formatMessage } from 'publint/utils'
import { packAll } from './pack-all.mjs'

// The CLI and the sandbox are ES modules only (a command, and a dev server whose dashboard files are found with
// import.meta): no CommonJS build, so TypeScript's node10 and node16-from-CommonJS resolutions are not theirs.
// On Node 20.19+ and 22.12+, their engines, require() of them still works.
const ESM_ONLY_RESOLUTIONS = ['node10', 'node16-cjs']

const kept = process.env.PAYHOOKS_CONSUMER_PACKS
const folder = kept ?? mkdtempSync(join(tmpdir(), 'payhooks-packs-'))
let failed = false
try {
  for (const { name, dual, tarball } of await packAll(folder)) {
    const bytes = readFileSync(tarball)
    const lint = await publint({
      pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) },
      strict: true,
    })
    const attw = await checkPackage(createPackageFromTarballData(new Uint8Array(bytes)))
    const ignored = dual ? [] : ESM_ONLY_RESOLUTIONS
    const problems = attw.types
      ? attw.problems.filter((p) => !('resolutionKind' in p) || !ignored.includes(p.resolutionKind))
      : [{ kind: 'NoTypes' }]
    const entrypoints = attw.types ? Object.keys(attw.entrypoints).length : 0
    const ok = lint.messages.length === 0 && problems.length === 0
    failed ||= !ok
    const scope = dual ? 'node10, node16 (CJS, ESM), bundler' : 'node16 (ESM), bundler: ES modules only'
    console.log(
      `${ok ? 'ok  ' : 'FAIL'} ${name}: publint ${lint.messages.length} messages; attw ${problems.length} problems in ${entrypoints} entry points (${scope})`,
    )
    for (const message of lint.messages)
      console.log(`       publint ${message.type}: ${formatMessage(message, lint.pkg)}`)
    for (const problem of problems) console.log(`       attw ${JSON.stringify(problem)}`)
  }
} finally {
  if (!kept) rmSync(folder, { recursive: true, force: true })
}
if (failed) process.exit(1)
