import { readFileSync } from 'node:fs'
import { type ParseArgsConfig, parseArgs } from 'node:util'
import { PayhooksClientError } from '@payhooks/client'
import { deadLetterCommands } from './commands/dead-letters.js'
import { eventCommands } from './commands/events.js'
import { localCommands } from './commands/local.js'
import { migrateCommands } from './commands/migrate.js'
import { pauseCommands } from './commands/pause.js'
import { proveCommand } from './commands/prove.js'
import { sandboxCommands } from './commands/sandbox.js'
import { serviceCommands } from './commands/service.js'
import { sizeCommands } from './commands/size.js'
import { type CliIo, CommandFailed, type Context, UsageError } from './context.js'
import { commandHelp, groupHelp, mainHelp } from './help.js'
import { type CommandSpec, commonOptions, connectionOptions, type OptionSpec } from './spec.js'

const localGroup: CommandSpec[] = [
  ...localCommands,
  proveCommand,
  ...sandboxCommands,
  ...deadLetterCommands,
  ...pauseCommands,
  ...eventCommands,
  ...migrateCommands,
  ...sizeCommands,
]
const commands: CommandSpec[] = [...serviceCommands, ...localGroup]
const GROUPS = new Set(commands.filter((c) => c.name.length > 1).map((c) => c.name[0] as string))
const HELP_FLAGS = new Set(['--help', '-h'])
const mainHelpText = () => mainHelp(serviceCommands, localGroup)

function processIo(): CliIo {
  return {
    // Lazy: touching process.stdin opens it, which only the commands that read it should do.
    get stdin() {
      return process.stdin
    },
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
  }
}

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
  return pkg.version
}

function toParseArgs(options: Record<string, OptionSpec>): NonNullable<ParseArgsConfig['options']> {
  const out: NonNullable<ParseArgsConfig['options']> = {}
  for (const [name, spec] of Object.entries(options)) {
    out[name] = {
      type: spec.type,
      ...(spec.multiple ? { multiple: true } : {}),
      ...(spec.short ? { short: spec.short } : {}),
      ...(spec.default !== undefined ? { default: spec.default } : {}),
    } as NonNullable<ParseArgsConfig['options']>[string]
  }
  return out
}

/** Node's parseArgs messages carry a long hint after the first sentence. */
function parseArgsMessage(error: Error): string {
  const unknown = /^Unknown option '([^']+)'/.exec(error.message)
  if (unknown) return `unknown option ${unknown[1]}`
  return (error.message.split('. ')[0] ?? error.message).replace(/\.$/, '')
}

function findCommand(argv: string[]): CommandSpec | undefined {
  return commands.find((c) => c.name.every((word, i) => argv[i] === word))
}

async function dispatch(argv: string[], io: CliIo, setName: (name: string) => void): Promise<number> {
  const first = argv[0]
  if (first === undefined) {
    io.stderr.write(mainHelpText())
    return 2
  }
  if (HELP_FLAGS.has(first)) {
    io.stdout.write(mainHelpText())
    return 0
  }
  if (first === '--version' || first === '-v') {
    io.stdout.write(`${version()}\n`)
    return 0
  }
  if (first === 'help') {
    const rest = argv.slice(1)
    const target = findCommand(rest)
    if (target) io.stdout.write(commandHelp(target))
    else if (rest[0] && GROUPS.has(rest[0])) io.stdout.write(groupHelp(rest[0], commands))
    else if (rest.length === 0) io.stdout.write(mainHelpText())
    else throw new UsageError(`unknown command "${rest.join(' ')}"`)
    return 0
  }
  const command = findCommand(argv)
  if (!command) {
    if (GROUPS.has(first)) {
      setName(first)
      const second = argv[1]
      if (second !== undefined && HELP_FLAGS.has(second)) {
        io.stdout.write(groupHelp(first, commands))
        return 0
      }
      if (second === undefined) {
        io.stderr.write(groupHelp(first, commands))
        return 2
      }
      throw new UsageError(`unknown command "${second}"`)
    }
    throw new UsageError(`unknown command "${first}"`)
  }
  const name = command.name.join(' ')
  setName(name)
  const args = argv.slice(command.name.length)
  const beforeTerminator = args.includes('--') ? args.slice(0, args.indexOf('--')) : args
  if (beforeTerminator.some((arg) => HELP_FLAGS.has(arg))) {
    io.stdout.write(commandHelp(command))
    return 0
  }
  const options = { ...command.options, ...(command.service ? connectionOptions : {}), ...commonOptions }
  let parsed: ReturnType<typeof parseArgs>
  try {
    parsed = parseArgs({
      args,
      options: toParseArgs(options),
      allowPositionals: true,
      allowNegative: true,
      strict: true,
    })
  } catch (error) {
    throw new UsageError(parseArgsMessage(error as Error))
  }
  const { min, max, name: positionalName } = command.positionals
  const count = parsed.positionals.length
  if (count < min) throw new UsageError(`missing ${positionalName ?? 'argument'}`)
  if (count > max) {
    throw new UsageError(
      max === 0
        ? `unexpected argument "${parsed.positionals[0]}"`
        : `too many arguments: ${parsed.positionals.join(' ')}`,
    )
  }
  const ctx: Context = {
    values: parsed.values,
    positionals: parsed.positionals,
    io,
    json: parsed.values.json === true,
    command: name,
  }
  return command.run(ctx)
}

/**
 * Runs the `payhooks` command line and resolves with its exit code: 0 success, 1 the service or
 * the receiver said no (or could not be reached), 2 bad usage (and, for `prove`, a receiver that cannot be
 * reached at all). Errors are written to `io.stderr` as one line, never with a stack or a credential.
 *
 * @example
 * process.exitCode = await run(['subscriptions', 'list', '--json'])
 */
export async function run(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  let name = ''
  const prefix = () => `payhooks${name ? ` ${name}` : ''}`
  try {
    return await dispatch([...argv], io, (value) => {
      name = value
    })
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`${prefix()}: ${error.message}; see 'payhooks ${name ? `${name} ` : ''}--help'\n`)
      return 2
    }
    if (error instanceof CommandFailed || error instanceof PayhooksClientError) {
      io.stderr.write(`${prefix()}: ${error.message}\n`)
      return 1
    }
    const message = error instanceof Error ? error.message : String(error)
    io.stderr.write(`${prefix()}: unexpected error: ${message.split('\n')[0]}\n`)
    return 1
  }
}
