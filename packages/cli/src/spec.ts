import type { Context } from './context.js'

/** One flag: what parseArgs needs, plus what the help shows. */
export interface OptionSpec {
  type: 'string' | 'boolean'
  multiple?: boolean
  short?: string
  default?: string | boolean
  /** Placeholder of the value in the help, such as `<url>`. */
  arg?: string
  /** Environment variable read when the flag is absent. */
  env?: string
  help: string
}

/** One command of the `payhooks` line. */
export interface CommandSpec {
  /** Words after `payhooks`, such as `['subscriptions', 'create']`. */
  name: string[]
  /** Usage line after `payhooks <name> `. */
  usage: string
  summary: string
  /** Further lines of the command's help. */
  details?: string[]
  examples: string[]
  options: Record<string, OptionSpec>
  /** Takes the connection flags (`--base-url`, credentials, `--merchant`, `--timeout-ms`). */
  service?: boolean
  positionals: { min: number; max: number; name?: string }
  run(ctx: Context): Promise<number>
}

/** Flags every service command takes, with their environment variables. */
export const connectionOptions: Record<string, OptionSpec> = {
  'base-url': { type: 'string', arg: '<url>', env: 'PAYHOOKS_BASE_URL', help: 'base address of the service' },
  'reseller-key': {
    type: 'string',
    arg: '<key>',
    env: 'PAYHOOKS_RESELLER_KEY',
    help: 'reseller key (digits|string): Authorization: reseller <key>',
  },
  username: {
    type: 'string',
    arg: '<name>',
    env: 'PAYHOOKS_USERNAME',
    help: 'merchant API username: Authorization: basic <username>:<key>',
  },
  'api-key': { type: 'string', arg: '<key>', env: 'PAYHOOKS_API_KEY', help: 'merchant API key' },
  merchant: {
    type: 'string',
    arg: '<id>',
    env: 'PAYHOOKS_MERCHANT_ID',
    help: 'numeric merchant id, sent as Service-Merchant-Id',
  },
  'timeout-ms': { type: 'string', arg: '<ms>', help: 'abort a call after this long (default 30000)' },
}

/** Flags of every command. */
export const commonOptions: Record<string, OptionSpec> = {
  json: { type: 'boolean', help: 'print JSON for scripts instead of tables' },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
}
