import { readFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { expect, it } from 'vitest'

/** Modules `file` loads at run time, following relative imports; `import type` is erased and skipped. */
function runtimeImports(file: string, seen = new Set<string>()): Set<string> {
  const external = new Set<string>()
  if (seen.has(file)) return external
  seen.add(file)
  const source = readFileSync(file, 'utf8')
  for (const [, typeOnly, specifier] of source.matchAll(/^(?:import|export)\s+(type\s+)?[^;]*?from\s+'([^']+)'/gms)) {
    if (typeOnly || !specifier) continue
    if (specifier.startsWith('.')) {
      for (const dep of runtimeImports(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')), seen)) {
        external.add(dep)
      }
    } else external.add(specifier)
  }
  return external
}

it('loads no Node module from the main entry, so it runs on Workers, Deno and Bun', () => {
  const imports = [...runtimeImports(resolve(import.meta.dirname, 'index.ts'))]
  expect(imports).toEqual(['valibot'])
})
