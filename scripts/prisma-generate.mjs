#!/usr/bin/env node
// The Prisma clients of the tests and bench/ (prismaStore's of @payhooks/postgres and of @payhooks/mysql, from
// test/fixtures/prisma/schema.prisma and test/fixtures/prisma-mysql/schema.prisma), each generated into generated/prisma
// beside its schema (ignored by git) from a clean clone, offline. Prisma 7's client runs on a driver
// adapter (@prisma/adapter-pg) with no engine binary, but `prisma generate` looks for the schema engine, and downloads
// it when missing, which these machines cannot: any executable named by PRISMA_SCHEMA_ENGINE_BINARY stands in (it is
// not run to generate). `pnpm typecheck` and `pnpm test` run this first; it does nothing when the client is newer
// than its schema and of the installed Prisma.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const root = join(import.meta.dirname, '..')
export const PRISMA_SCHEMAS = [
  join(root, 'test/fixtures/prisma/schema.prisma'),
  join(root, 'test/fixtures/prisma-mysql/schema.prisma'),
]

const version = () => JSON.parse(readFileSync(join(root, 'node_modules/prisma/package.json'), 'utf8')).version

/** Whether the client generated from `schema` is there, newer than it, and of the installed Prisma. */
function upToDate(schema) {
  const generated = join(schema, '..', 'generated', 'prisma', 'package.json')
  if (!existsSync(generated) || statSync(generated).mtimeMs < statSync(schema).mtimeMs) return false
  return readFileSync(join(schema, '..', 'generated', 'prisma', 'index.js'), 'utf8').includes(`"${version()}"`)
}

/** Generates each client that is missing or stale; exits the process on failure. */
export function generatePrismaClients() {
  for (const schema of PRISMA_SCHEMAS) {
    if (upToDate(schema)) continue
    const result = spawnSync(join(root, 'node_modules/.bin/prisma'), ['generate', '--schema', schema], {
      cwd: root,
      encoding: 'utf8',
      env: {
        ...process.env,
        PRISMA_SCHEMA_ENGINE_BINARY: existsSync('/bin/true') ? '/bin/true' : process.execPath,
        // No update check, no telemetry: nothing leaves the machine.
        CHECKPOINT_DISABLE: '1',
        PRISMA_HIDE_UPDATE_MESSAGE: '1',
      },
    })
    if (result.status !== 0) {
      console.error(`prisma generate --schema ${schema} failed:\n${result.stdout}${result.stderr}${result.error ?? ''}`)
      process.exit(1)
    }
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) generatePrismaClients()
