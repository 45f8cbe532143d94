/**
 * Where a command reads and writes: the process by default, anything stream-like when embedding.
 *
 * @example
 * const lines: string[] = []
 * const io: CliIo = { stdin: [], stdout: { write: (s) => lines.push(s) }, stderr: process.stderr, env: {} }
 * await run(['sign', '--secret', 's'], { ...io, stdin: [new TextEncoder().encode('{}')] })
 */
export interface CliIo {
  stdin: (AsyncIterable<Uint8Array | string> | Iterable<Uint8Array | string>) & { isTTY?: boolean }
  stdout: { write(chunk: string): unknown }
  stderr: { write(chunk: string): unknown }
  env: Record<string, string | undefined>
}

/** Parsed flag values, as node:util parseArgs gives them. */
export type Values = Record<string, string | boolean | (string | boolean)[] | undefined>

/** What a command runs with. */
export interface Context {
  values: Values
  positionals: string[]
  io: CliIo
  json: boolean
  /** Full command name, such as `subscriptions create`. */
  command: string
}

/** Bad usage: exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}

/** The service or the receiver said no, or could not be reached: exit code 1. The message is already one line. */
export class CommandFailed extends Error {
  override name = 'CommandFailed'
}

export function out(ctx: Context, text: string): void {
  ctx.io.stdout.write(text.endsWith('\n') ? text : `${text}\n`)
}

export function printJson(ctx: Context, value: unknown): void {
  ctx.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`)
}

export function warn(ctx: Context, text: string): void {
  ctx.io.stderr.write(`payhooks ${ctx.command}: ${text}\n`)
}

export function stringValue(ctx: Context, name: string, envName?: string): string | undefined {
  const flag = ctx.values[name]
  if (typeof flag === 'string') return flag
  const env = envName ? ctx.io.env[envName] : undefined
  return env === undefined || env === '' ? undefined : env
}

export function requireString(ctx: Context, name: string, envName?: string): string {
  const value = stringValue(ctx, name, envName)
  if (value === undefined || value === '') {
    throw new UsageError(`--${name} is required${envName ? ` (or set ${envName})` : ''}`)
  }
  return value
}

export function integerValue(
  ctx: Context,
  name: string,
  { min, max, envName }: { min: number; max: number; envName?: string },
): number | undefined {
  const text = stringValue(ctx, name, envName)
  if (text === undefined) return undefined
  const value = /^\d+$/.test(text) ? Number(text) : Number.NaN
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new UsageError(
      `--${name}${envName && typeof ctx.values[name] !== 'string' ? ` (${envName})` : ''} must be an integer from ${min} to ${max}`,
    )
  }
  return value
}

/** The exact bytes piped on stdin. */
export async function readStdin(ctx: Context): Promise<Uint8Array> {
  if (ctx.io.stdin.isTTY) throw new UsageError('pipe the body on stdin, as in: payhooks sign --secret s < body.json')
  const chunks: Buffer[] = []
  for await (const chunk of ctx.io.stdin) {
    chunks.push(
      typeof chunk === 'string'
        ? Buffer.from(chunk, 'utf8')
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
    )
  }
  return Buffer.concat(chunks)
}
