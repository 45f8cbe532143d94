// TypeDoc plugin: names each entry point's module after its package and subpath (`@payhooks/core`, `@payhooks/core/node`)
// rather than its source path (`core/src/node`), and writes each module's page as <name>/index.md, so the reference
// of a package is at /api/core/ and of a subpath at /api/core/node/, members as sections of those pages.
import { Converter, ReflectionKind } from 'typedoc'
import { ModuleRouter } from 'typedoc-plugin-markdown'
import { modules } from './typedoc.mjs'

class PackageRouter extends ModuleRouter {
  getIdealBaseName(reflection) {
    if (reflection.kind !== ReflectionKind.Module) return super.getIdealBaseName(reflection)
    return `${this.getReflectionAlias(reflection).replace(/^@payhooks\//, '')}/${this.entryFileName}`
  }
}

/** @param {import('typedoc').Application} app */
export function load(app) {
  app.renderer.defineRouter('payhooks-packages', PackageRouter)
  // TypeDoc names an entry's module by its path from the packages' folder: `core/src` (index.ts), `core/src/node`.
  const names = new Set(modules.map(([name]) => name))
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getChildrenByKind(ReflectionKind.Module)) {
      const name = module.name.replace(/\/src(?=\/|$)/, '')
      if (names.has(name)) module.name = `@payhooks/${name}`
      else app.logger.warn(`No package entry for the module ${module.name}`)
    }
  })
}
