import { createHash } from 'node:crypto'
import type { Cluster, Redis } from 'ioredis'

// Redis 7 Functions for the store's steps that run on every event (issue 49). A script sent by EVALSHA runs its whole
// chunk on each call, so every helper it carries is defined again each time; a library's helpers are defined once,
// when `FUNCTION LOAD` compiles it, and an `FCALL` costs less than an `EVALSHA` before its work too. The library's name
// is a hash of its text, so instances of different releases each load and call their own. A server without Functions
// (Redis before 7, or an ACL user without `FUNCTION`/`FCALL`) runs the same steps as scripts: the store's commands
// fall back to them for good. A server that lost the library (a new Cluster primary, `FUNCTION FLUSH`) gets it again
// on the first call that finds it missing; a full Redis, which refuses `FUNCTION LOAD`, runs that call as a script.

/** One function of a library: its setup and body (store-scripts.ts `Step`), its keys, and whether a full Redis runs it. */
export interface LibraryFunction {
  readonly setup: string
  readonly body: string
  readonly numberOfKeys: number
  readonly allowOom: boolean
}

/** Lua shared by a library's functions (locals and helpers), what each call resets first, and the functions by name. */
export interface Library {
  readonly shared: string
  readonly reset: string
  readonly functions: Readonly<Record<string, LibraryFunction>>
}

/** The text `FUNCTION LOAD` takes, and each function's name in Redis (`<library>_<name>`). */
export function libraryCode(library: Library): { code: string; names: Record<string, string> } {
  const registrations = Object.entries(library.functions).map(
    ([name, fn]) => `redis.register_function{function_name='@_${name}', callback=function(KEYS, ARGV)
${library.reset}
${fn.setup}
${fn.body}
end, flags={${fn.allowOom ? "'allow-oom'" : ''}}}`,
  )
  const text = `${library.shared}\n${registrations.join('\n')}\n`
  const id = `payhooks_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`
  const names = Object.fromEntries(Object.keys(library.functions).map((name) => [name, `${id}_${name}`]))
  return { code: `#!lua name=${id}\n${text.replaceAll("function_name='@_", `function_name='${id}_`)}`, names }
}

type Command = (...args: unknown[]) => Promise<unknown>

/** No Functions here, for good: Redis before 7 (`FCALL` unknown), or a user whose ACL refuses them. */
const NO_FUNCTIONS = /unknown command|NOPERM/i
/** Redis's answer to an `FCALL` of a function it does not have. */
const NOT_LOADED = /Function not found/i
/** A full Redis refusing a function that may write (a claim's), which as a script still answers a duplicate. */
const OOM = /^OOM /

/**
 * Commands of the same names as `library`'s functions: each an `FCALL`, or `fallback[name]` (the step as a script)
 * where the server has no Functions, the library could not be loaded, or (for a function not flagged `allowOom`) the
 * server is full. `ready()` loads the library ahead of the first call (its errors are left to the calls).
 */
export function functionCommands<T>(
  client: Redis | Cluster,
  library: Library,
  fallback: Readonly<Record<string, Command>>,
): T & { ready(): Promise<void>; fcallName(name: string): string | undefined } {
  const { code, names } = libraryCode(library)
  // An ioredis whose command list predates FCALL has no method for it: scripts only.
  const fcallOf = (client as unknown as { fcall?: Command }).fcall
  let off = typeof fcallOf !== 'function'
  let loading: Promise<boolean> | undefined
  const load = () =>
    (loading ??= loadEverywhere(client, code)
      .then(
        () => true,
        (error: unknown) => {
          if (error instanceof Error && NO_FUNCTIONS.test(error.message)) off = true
          return false
        },
      )
      .finally(() => {
        loading = undefined
      }))
  const fcall: Command = (...args) => (fcallOf as Command).apply(client, args)
  const commands: Record<string, Command> = {}
  for (const [name, fn] of Object.entries(library.functions)) {
    const script = fallback[name]
    if (!script) continue
    const call = (args: unknown[]) => fcall(names[name], fn.numberOfKeys, ...args)
    const refused = (error: unknown) => {
      const message = error instanceof Error ? error.message : ''
      if (NO_FUNCTIONS.test(message)) off = true
      return off || (OOM.test(message) && !fn.allowOom)
    }
    // One FCALL, and one more after loading the library when the server did not have it; else the script.
    commands[name] = async (...args) => {
      for (let loaded = false; !off; loaded = true) {
        try {
          return await call(args)
        } catch (error) {
          if (refused(error)) break
          if (!(error instanceof Error) || !NOT_LOADED.test(error.message)) throw error
          if (loaded || !(await load())) break
        }
      }
      return script(...args)
    }
  }
  const ready = async () => {
    if (!off) await load()
  }
  // The function's name in Redis while the server has Functions (for an FCALL sent in a batch), else undefined.
  const fcallName = (name: string) => (off ? undefined : names[name])
  return Object.assign(commands, { ready, fcallName }) as T & {
    ready(): Promise<void>
    fcallName(name: string): string | undefined
  }
}

/** `FUNCTION LOAD` on standalone Redis, or on every primary of a Cluster (their replicas copy it). */
async function loadEverywhere(client: Redis | Cluster, code: string): Promise<void> {
  const nodes = (client as { isCluster?: boolean }).isCluster === true ? (client as Cluster).nodes('master') : [client]
  await Promise.all(
    nodes.map((node) =>
      (node as Redis).call('FUNCTION', 'LOAD', code).catch((error: unknown) => {
        if (!(error instanceof Error) || !/already exists/i.test(error.message)) throw error
      }),
    ),
  )
}
