// The published packages (packages/* not marked private), for the build, pack and lint scripts.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

export const root = resolve(import.meta.dirname, '..')

/** @returns {{ dir: string, name: string, version: string, file: string, dual: boolean }[]} */
export function publishedPackages() {
  const dirs = readdirSync(join(root, 'packages')).map((name) => join(root, 'packages', name))
  return dirs
    .filter((dir) => existsSync(join(dir, 'package.json')))
    .map((dir) => ({ dir, pkg: JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) }))
    .filter(({ pkg }) => !pkg.private)
    .map(({ dir, pkg }) => ({
      dir,
      name: pkg.name,
      version: pkg.version,
      // What pack-all writes: no version in the name, so install commands stay the same across releases.
      file: `${pkg.name.replace(/^@/, '').replace('/', '-')}.tgz`,
      // ES modules only (the CLI, the sandbox) or a CommonJS build beside them (dist/cjs).
      dual: existsSync(join(dir, 'tsconfig.cjs.json')),
    }))
}
