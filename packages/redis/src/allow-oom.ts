import type { Cluster, Redis } from 'ioredis'

// Under `maxmemory` with `noeviction` a full Redis refuses every write that may grow memory: a claim's `SET NX`, and
// so a new event, is refused (the receiver answers 503 and the service retries), as it should be. But the steps of a
// claim already taken must still go through: its renewal (else a copy runs beside its handlers), its done marker
// (else the answered event runs again once its lease ends) and its release (else a failed event waits its lease
// out). Redis 7 runs a script whose shebang carries `allow-oom` even when full; each of these scripts writes only
// keys of the claim itself, about as large as before (the marker replaces the claim's token, the fence's mark its
// lock), so the memory they take past `maxmemory` is bounded by the claims in flight.

/**
 * A server that cannot read script flags: Redis 6 compiles the shebang as Lua and fails on `#`; a server that knows
 * shebangs but not this flag says so.
 */
const NO_FLAGS = /Error compiling script|shebang/i

/** A script and how many of its arguments are keys, as ioredis's `defineCommand` takes them. */
export interface ScriptDefinition {
  readonly lua: string
  readonly numberOfKeys: number
}

type Command = (...args: unknown[]) => Promise<unknown>

/**
 * Defines each script on `client` twice: as its own name, flagged `allow-oom`, and as `<name>Compat`, unflagged.
 * Returns commands of the same names, which run the flagged script until a server refuses its flags (Redis before
 * 7), then the unflagged one, for every command of the set: there a full Redis refuses the claim's writes as before.
 * ioredis sends the flagged script by EVALSHA of its whole text, shebang included, so the flags go with every call.
 * `flags` is the shebang's flag list (another only in tests: one no server knows).
 */
export function allowOomCommands<T>(
  client: Redis | Cluster,
  scripts: Record<string, ScriptDefinition>,
  flags = 'allow-oom',
): T {
  const defined = client as unknown as Record<string, Command>
  let compat = false
  const commands: Record<string, Command> = {}
  for (const [name, { lua, numberOfKeys }] of Object.entries(scripts)) {
    client.defineCommand(name, { numberOfKeys, lua: `#!lua flags=${flags}\n${lua}` })
    client.defineCommand(`${name}Compat`, { numberOfKeys, lua })
    const flagged = defined[name] as Command
    const plain = defined[`${name}Compat`] as Command
    const unflagged = (args: unknown[]) => plain.apply(client, args)
    commands[name] = (...args) => {
      if (compat) return unflagged(args)
      return flagged.apply(client, args).catch((error: unknown) => {
        if (!(error instanceof Error) || !NO_FLAGS.test(error.message)) throw error
        compat = true
        return unflagged(args)
      })
    }
  }
  return commands as T
}
