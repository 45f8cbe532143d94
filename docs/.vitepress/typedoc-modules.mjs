// TypeDoc plugin: names each entry point's module after its package and subpath (`core`, `core/node`, `board/express`)
// rather than its source path (`core/src/node`), so the reference lives at /api/core/, /api/core/node/, ...
import { Converter, ReflectionKind } from 'typedoc'
import { modules } from './typedoc.mjs'

/** @param {import('typedoc').Application} app */
export function load(app) {
  const byFile = new Map(modules.map(([name, file]) => [file, name]))
  app.converter.on(Converter.EVENT_RESOLVE_BEGIN, (context) => {
    for (const module of context.project.getChildrenByKind(ReflectionKind.Module)) {
      const file = module.sources?.[0]?.fullFileName
      const name = file && byFile.get(file)
      if (name) module.name = name
      else app.logger.warn(`No package entry for the module ${module.name} (${file})`)
    }
  })
}
