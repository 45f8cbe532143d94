// Module resolution hooks for scripts/oldest-majors.mjs (they run on the loader's thread).
import { OLDEST_MAJORS } from './test-matrix.mjs'

const root = new URL('../package.json', import.meta.url).href

export async function resolve(specifier, context, next) {
  for (const [name, alias] of Object.entries(OLDEST_MAJORS)) {
    if (specifier === name || specifier.startsWith(`${name}/`)) {
      return next(alias + specifier.slice(name.length), { ...context, parentURL: root })
    }
  }
  return next(specifier, context)
}
