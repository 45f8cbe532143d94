// The event-type check every command that names a type shares: one refusal, one "did you mean".
import { closestEventType, knownEventTypes } from '@payhooks/core'
import { type Context, UsageError } from './context.js'
import type { OptionSpec } from './spec.js'

export const ALLOW_UNKNOWN = 'allow-unknown-event-type'

export const allowUnknownOption: OptionSpec = {
  type: 'boolean',
  help: 'send event types the spec does not name (otherwise refused, as a misspelt one would never deliver)',
}

/**
 * Refuses event types the spec does not name unless `--allow-unknown-event-type` is given: the
 * service may accept a misspelt type, and the subscription then silently never delivers.
 */
export function checkEventTypes(ctx: Context, types: string[]): void {
  if (ctx.values[ALLOW_UNKNOWN] === true) return
  const known = knownEventTypes as readonly string[]
  const unknown = types.filter((type) => !known.includes(type))
  const first = unknown[0]
  if (first === undefined) return
  const nearest = closestEventType(first.toLowerCase(), known, Math.max(2, Math.floor(first.length / 4)))
  const hint = nearest ? ` (did you mean ${nearest}?)` : ''
  throw new UsageError(
    `${unknown.length > 1 ? `event types ${unknown.map((t) => `"${t}"`).join(', ')} are` : `event type "${first}" is`} not one the spec names${hint}: it names ${known.join(', ')}; pass --${ALLOW_UNKNOWN} to send ${unknown.length > 1 ? 'them' : 'it'} anyway`,
  )
}
