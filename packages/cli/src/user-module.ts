import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { CommandFailed, type Context, requireString } from './context.js'
import type { OptionSpec } from './spec.js'

export const MODULE_ENV = 'PAYHOOKS_MODULE'

/** `--module`: the user's module exporting the receiver a command works through. */
export const moduleOption: OptionSpec = {
  type: 'string',
  arg: '<file>',
  env: MODULE_ENV,
  help: 'your module exporting the receiver (or dead letters) to use (required)',
}

/** What to do about a module Node cannot import as it is: TypeScript, which this Node does not run. */
function loadHint(ctx: Context, file: string, error: unknown): string {
  if ((error as { code?: string }).code !== 'ERR_UNKNOWN_FILE_EXTENSION' || !/\.[cm]?tsx?$/.test(file)) return ''
  return `; this Node does not run TypeScript: build the module first and pass its .js, or run the CLI with tsx loaded (npm i -D tsx; NODE_OPTIONS='--import tsx' payhooks ${ctx.command} --module ${file})`
}

/** Imports the module of `--module` (or PAYHOOKS_MODULE): its file name and exports. */
export async function importModule(ctx: Context): Promise<{ file: string; exports: Record<string, unknown> }> {
  const file = requireString(ctx, 'module', MODULE_ENV)
  try {
    return { file, exports: await import(pathToFileURL(resolve(process.cwd(), file)).href) }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new CommandFailed(`cannot load ${file}: ${message.split('\n')[0]}${loadHint(ctx, file, error)}`)
  }
}
