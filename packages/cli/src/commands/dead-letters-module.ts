// What the `dead-letters` commands share: the user's module and its dead letters, the filter flags, counting.
import type { DeadLetter, DeadLetterCode, DeadLetterCountQuery, DeadLetterFilter, DeadLetters } from '@payhooks/core'
import { CommandFailed, type Context, requireString, stringValue, UsageError, warn } from '../context.js'
import type { OptionSpec } from '../spec.js'
import { importModule, MODULE_ENV } from '../user-module.js'

export const MODULE_DETAILS = [
  'The commands reach your dead letters through a module of yours, run in this process, that exports',
  'the receiver built by createWebhooks({ deadLetters, ... }) (as default, or as `webhooks`), or any',
  'dead letters object such as `export const deadLetters = bullmqDeadLetters(queue)`. Replays run the',
  "receiver's own secrets, schemas, handlers and stores. An exported `close()` is called at the end.",
]

/** The help of the time flags, once for every command that takes them. */
export const TIME_DETAILS = [
  'Times are ISO 8601 with a zone (2026-11-28T02:00Z, 2026-11-28T03:00+01:00), a UTC date (2026-11-28),',
  'or a span back from now (90m, 6h, 3d). --parked-* is when the receiver parked the letter (its latest',
  "parkedAt); --created-* the event's signed created_at (a letter without one is in no created window).",
  'After: at or after that time; before: strictly before.',
]

export const filterOptions: Record<string, OptionSpec> = {
  'event-type': { type: 'string', arg: '<type>', help: 'only letters of this event type' },
  code: {
    type: 'string',
    arg: '<code>',
    help: 'only letters parked for this reason: schema_mismatch, handler_failed, stale_event or paused',
  },
  'parked-after': { type: 'string', arg: '<time>', help: 'only letters parked at or after this time' },
  'parked-before': { type: 'string', arg: '<time>', help: 'only letters parked before this time' },
  'created-after': { type: 'string', arg: '<time>', help: 'only events created at or after this time' },
  'created-before': { type: 'string', arg: '<time>', help: 'only events created before this time' },
}

export interface Loaded {
  deadLetters: DeadLetters
  close(): Promise<void>
}

const isDeadLetters = (value: unknown): value is DeadLetters =>
  typeof value === 'object' &&
  value !== null &&
  ['list', 'get', 'replay', 'replayAll'].every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/** Imports the user's module and finds its dead letters: an exported receiver's, or exported dead letters. */
export async function loadDeadLetters(ctx: Context): Promise<Loaded> {
  const { file, exports } = await importModule(ctx)
  for (const name of ['deadLetters', 'default', 'webhooks']) {
    const value = exports[name] as { deadLetters?: unknown; close?: () => Promise<void> } | undefined
    const found = isDeadLetters(value) ? value : isDeadLetters(value?.deadLetters) ? value.deadLetters : undefined
    if (!found) continue
    const receiver = found === value ? undefined : value
    const closeModule = exports.close
    return {
      deadLetters: found,
      async close() {
        await receiver?.close?.()
        if (typeof closeModule === 'function') await closeModule()
      },
    }
  }
  throw new UsageError(
    `${file} exports no dead letters: export default the receiver built by createWebhooks({ deadLetters }), or export const deadLetters`,
  )
}

/** Runs `work` with the module's dead letters, then closes what the module opened. */
export async function withDeadLetters(
  ctx: Context,
  work: (deadLetters: DeadLetters) => Promise<number>,
): Promise<number> {
  const loaded = await loadDeadLetters(ctx)
  if (loaded.deadLetters.durable === false) {
    warn(
      ctx,
      `warning: ${requireString(ctx, 'module', MODULE_ENV)} keeps its dead letters in memory (memoryDeadLetterStore), which is not durable: this process started with none, so it sees none of those your receiver parked. Use a durable store (redisDeadLetterStore from @payhooks/redis, postgresDeadLetterStore from @payhooks/postgres) to list and replay them from here.`,
    )
  }
  try {
    return await work(loaded.deadLetters)
  } catch (error) {
    if (error instanceof UsageError || error instanceof CommandFailed) throw error
    if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(error.message)
    throw new CommandFailed((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '')
  } finally {
    await loaded.close().catch(() => {})
  }
}

const DEAD_LETTER_CODES: readonly DeadLetterCode[] = ['schema_mismatch', 'handler_failed', 'stale_event', 'paused']
const UNITS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `--name`: an ISO 8601 time with a zone, a UTC date, or a span back from now (`90m`, `6h`, `3d`). */
function timeValue(ctx: Context, name: string, now: number): Date | undefined {
  const text = stringValue(ctx, name)
  if (text === undefined) return undefined
  const span = /^(\d+)([mhd])$/.exec(text)
  if (span) return new Date(now - Number(span[1]) * (UNITS[span[2] as string] as number))
  // A time without a zone would be read in this machine's: refused rather than guessed.
  const zoned = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2}))?$/i.test(text)
  const date = new Date(text)
  if (!zoned || Number.isNaN(date.getTime())) {
    throw new UsageError(`--${name} must be an ISO time with a zone (2026-11-28T02:00Z), a date, or a span (6h, 3d)`)
  }
  return date
}

/** The filter of the flags: `--code`, `--event-type`, and the parked and created windows. */
export function filterOf(ctx: Context, now = Date.now()): DeadLetterFilter {
  const code = stringValue(ctx, 'code')
  if (code !== undefined && !DEAD_LETTER_CODES.includes(code as DeadLetterCode)) {
    throw new UsageError('--code must be schema_mismatch, handler_failed, stale_event or paused')
  }
  const eventType = stringValue(ctx, 'event-type')
  const filter: DeadLetterFilter = {
    ...(eventType === undefined ? {} : { eventType }),
    ...(code === undefined ? {} : { code: code as DeadLetterCode }),
  }
  const times = [
    ['parked-after', 'parkedAfter'],
    ['parked-before', 'parkedBefore'],
    ['created-after', 'createdAfter'],
    ['created-before', 'createdBefore'],
  ] as const
  for (const [flag, field] of times) {
    const date = timeValue(ctx, flag, now)
    if (date) filter[field] = date
  }
  for (const kind of ['parked', 'created'] as const) {
    const after = filter[`${kind}After`]
    const before = filter[`${kind}Before`]
    if (after && before && after >= before) {
      throw new UsageError(`--${kind}-after must be earlier than --${kind}-before`)
    }
  }
  return filter
}

/** The filter as JSON, dates as ISO strings, snake_case as the rest of the commands' JSON. */
export function filterJson(filter: DeadLetterFilter): Record<string, string> {
  const json: Record<string, string> = {}
  if (filter.eventType !== undefined) json.event_type = filter.eventType
  if (filter.code !== undefined) json.code = filter.code
  if (filter.parkedAfter) json.parked_after = filter.parkedAfter.toISOString()
  if (filter.parkedBefore) json.parked_before = filter.parkedBefore.toISOString()
  if (filter.createdAfter) json.created_after = filter.createdAfter.toISOString()
  if (filter.createdBefore) json.created_before = filter.createdBefore.toISOString()
  return json
}

/** `2,000`: counts as people read them. */
export const figure = (n: number): string => n.toLocaleString('en-US')

const PAGE = 1000

/**
 * How many letters match `query`: the store's own count when it has one (from its indexes, however many letters),
 * else the letters listed a page at a time.
 */
export async function countMatching(deadLetters: DeadLetters, query: DeadLetterCountQuery): Promise<number> {
  if (typeof deadLetters.count === 'function') return deadLetters.count(query)
  let count = 0
  for (let offset = 0; ; offset += PAGE) {
    const page: DeadLetter[] = await deadLetters.list({ ...query, limit: PAGE, offset })
    count += page.length
    if (page.length < PAGE) return count
  }
}
