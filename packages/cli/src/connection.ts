import {
  ApiError,
  createClient,
  InvalidRequestError,
  type PayhooksClient,
  PayhooksClientError,
  type ResellerClient,
} from '@payhooks/client'
import { CommandFailed, type Context, integerValue, requireString, stringValue, UsageError } from './context.js'

/** A client in a merchant's context, or a reseller-level one (reseller key, no merchant id). */
export type Connection = { reseller: false; client: PayhooksClient } | { reseller: true; client: ResellerClient }

const OPTION_NAMES: [RegExp, string][] = [
  [/^(createClient|[a-z]+\.[a-zA-Z]+): /, ''],
  [/auth\.resellerKey/g, '--reseller-key'],
  [/auth\.username/g, '--username'],
  [/auth\.apiKey/g, '--api-key'],
  [/baseUrl/g, '--base-url'],
]

/** The client's words for a scope, as the flags that choose it. */
function scopeInFlags(message: string): string {
  return message
    .replace(/ \(scope 'reseller'\)/g, ' (made with --all-merchants)')
    .replace(/with that merchantId/g, 'with --merchant')
    .replace(/and no merchantId/g, 'and no --merchant')
}

function cliMessage(message: string): string {
  return OPTION_NAMES.reduce((text, [pattern, name]) => text.replace(pattern, name), message)
}

/**
 * Builds the client from flags, falling back to the environment. Credentials come from flags or
 * from the environment as a whole, so a flag never combines with a stale variable of the other scheme.
 */
export function connect(ctx: Context): Connection {
  const baseUrl = requireString(ctx, 'base-url', 'PAYHOOKS_BASE_URL')
  const fromFlags = ['reseller-key', 'username', 'api-key'].some((name) => typeof ctx.values[name] === 'string')
  const credential = (name: string, env: string) =>
    fromFlags ? (ctx.values[name] as string | undefined) : stringValue(ctx, name, env)
  const resellerKey = credential('reseller-key', 'PAYHOOKS_RESELLER_KEY')
  const username = credential('username', 'PAYHOOKS_USERNAME')
  const apiKey = credential('api-key', 'PAYHOOKS_API_KEY')
  if (resellerKey !== undefined && (username !== undefined || apiKey !== undefined)) {
    throw new UsageError('give either a reseller key or a username and API key, not both')
  }
  if (resellerKey === undefined && (username === undefined || apiKey === undefined)) {
    throw new UsageError(
      username !== undefined || apiKey !== undefined
        ? '--username and --api-key go together'
        : 'credentials needed: --reseller-key (PAYHOOKS_RESELLER_KEY), or --username and --api-key (PAYHOOKS_USERNAME, PAYHOOKS_API_KEY)',
    )
  }
  const merchantId = integerValue(ctx, 'merchant', {
    min: 1,
    max: Number.MAX_SAFE_INTEGER,
    envName: 'PAYHOOKS_MERCHANT_ID',
  })
  const timeoutMs = integerValue(ctx, 'timeout-ms', { min: 1, max: 2_147_483_647 })
  try {
    if (resellerKey !== undefined && merchantId === undefined) {
      return { reseller: true, client: createClient({ baseUrl, auth: { resellerKey }, timeoutMs }) }
    }
    const auth =
      resellerKey !== undefined ? { resellerKey } : { username: username as string, apiKey: apiKey as string }
    return { reseller: false, client: createClient({ baseUrl, auth, merchantId, timeoutMs }) }
  } catch (error) {
    throw new UsageError(cliMessage((error as Error).message))
  }
}

/**
 * Runs a client call: argument errors raised before sending are bad usage (2), typed failures of
 * the call itself mean the service said no or could not be reached (1).
 */
export async function call<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof PayhooksClientError) {
      // The command name already says which call it was.
      const message = error.message.replace(`${error.operation}: `, '')
      throw new CommandFailed(error instanceof ApiError && error.searched ? scopeInFlags(message) : message)
    }
    if (error instanceof InvalidRequestError || error instanceof TypeError || error instanceof RangeError) {
      throw new UsageError(cliMessage(error.message))
    }
    throw error
  }
}
