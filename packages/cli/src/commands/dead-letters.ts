import type {
  DeadLetter,
  DeadLetterCode,
  DeadLetterFilter,
  DeadLetters,
  ReplayOutcome,
  ReplayReport,
} from '@payhooks/core'
import {
  CommandFailed,
  type Context,
  integerValue,
  out,
  printJson,
  requireString,
  stringValue,
  UsageError,
  warn,
} from '../context.js'
import { keyValues, show, table } from '../format.js'
import type { CommandSpec, OptionSpec } from '../spec.js'
import { importModule, MODULE_ENV, moduleOption } from '../user-module.js'

const MODULE_DETAILS = [
  'The commands reach your dead letters through a module of yours, run in this process, that exports',
  'the receiver built by createWebhooks({ deadLetters, ... }) (as default, or as `webhooks`), or any',
  'dead letters object such as `export const deadLetters = bullmqDeadLetters(queue)`. Replays run the',
  "receiver's own secrets, schemas, handlers and stores. An exported `close()` is called at the end.",
]

const filterOptions: Record<string, OptionSpec> = {
  'event-type': { type: 'string', arg: '<type>', help: 'only letters of this event type' },
  code: {
    type: 'string',
    arg: '<code>',
    help: 'only letters parked for this reason: schema_mismatch, handler_failed or stale_event',
  },
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
async function withDeadLetters(ctx: Context, work: (deadLetters: DeadLetters) => Promise<number>): Promise<number> {
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

const DEAD_LETTER_CODES: readonly DeadLetterCode[] = ['schema_mismatch', 'handler_failed', 'stale_event']

function filterOf(ctx: Context): DeadLetterFilter {
  const code = stringValue(ctx, 'code')
  if (code !== undefined && !DEAD_LETTER_CODES.includes(code as DeadLetterCode)) {
    throw new UsageError('--code must be schema_mismatch, handler_failed or stale_event')
  }
  const eventType = stringValue(ctx, 'event-type')
  return {
    ...(eventType === undefined ? {} : { eventType }),
    ...(code === undefined ? {} : { code: code as DeadLetterCode }),
  }
}

const iso = (date: Date | undefined) => date?.toISOString() ?? null

/** A letter as JSON: snake_case like the service's own fields, dates as ISO strings. */
function letterJson(letter: DeadLetter, withBody: boolean): Record<string, unknown> {
  const json: Record<string, unknown> = {
    event_id: letter.eventId,
    event_type: letter.eventType,
    code: letter.code,
    reason: letter.reason,
    status: letter.status,
    created_at: iso(letter.createdAt),
    first_parked_at: iso(letter.firstParkedAt),
    parked_at: iso(letter.parkedAt),
    park_count: letter.parkCount,
    replayed_at: iso(letter.replayedAt),
  }
  if (withBody) {
    json.headers = letter.headers
    json.body = new TextDecoder().decode(letter.body)
    json.body_base64 = Buffer.from(letter.body.buffer, letter.body.byteOffset, letter.body.byteLength).toString(
      'base64',
    )
  }
  return json
}

const list: CommandSpec = {
  name: ['dead-letters', 'list'],
  usage: '--module <file> [options]',
  summary: 'List dead letters: signed events parked because they could not be handled',
  details: ['Newest first; parked ones by default (--status replayed or all for the others).', ...MODULE_DETAILS],
  examples: [
    'payhooks dead-letters list --module ./dist/webhooks.js',
    'payhooks dead-letters list --module ./dist/webhooks.js --code schema_mismatch --limit 20 --json',
  ],
  options: {
    module: moduleOption,
    ...filterOptions,
    status: { type: 'string', arg: '<status>', help: 'parked (default), replayed or all' },
    limit: { type: 'string', arg: '<n>', help: 'at most this many (default 100)' },
    offset: { type: 'string', arg: '<n>', help: 'skip this many first (default 0)' },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const filter = filterOf(ctx)
    const status = stringValue(ctx, 'status') ?? 'parked'
    if (status !== 'parked' && status !== 'replayed' && status !== 'all') {
      throw new UsageError('--status must be parked, replayed or all')
    }
    const limit = integerValue(ctx, 'limit', { min: 1, max: 100_000 }) ?? 100
    const offset = integerValue(ctx, 'offset', { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? 0
    return withDeadLetters(ctx, async (deadLetters) => {
      const letters = await deadLetters.list({ ...filter, status, limit, offset })
      if (ctx.json)
        printJson(
          ctx,
          letters.map((letter) => letterJson(letter, false)),
        )
      else if (letters.length === 0) out(ctx, `No ${status === 'all' ? '' : `${status} `}dead letters.`)
      else {
        const rows = letters.map((l) => [
          l.eventId,
          l.eventType,
          l.code,
          l.status,
          l.parkedAt.toISOString(),
          String(l.parkCount),
          l.reason,
        ])
        out(ctx, table(['EVENT_ID', 'EVENT_TYPE', 'CODE', 'STATUS', 'PARKED_AT', 'COUNT', 'REASON'], rows))
      }
      return 0
    })
  },
}

const showCommand: CommandSpec = {
  name: ['dead-letters', 'show'],
  usage: '<event_id> --module <file> [--json]',
  summary: 'Show one dead letter: its reason, times, headers and the exact body received',
  details: ['Exits 1 when there is no dead letter for the id.', ...MODULE_DETAILS],
  examples: ['payhooks dead-letters show evt_123 --module ./dist/webhooks.js'],
  options: { module: moduleOption },
  positionals: { min: 1, max: 1, name: '<event_id>' },
  async run(ctx) {
    const eventId = ctx.positionals[0] as string
    return withDeadLetters(ctx, async (deadLetters) => {
      const letter = await deadLetters.get(eventId)
      if (!letter) throw new CommandFailed(`no dead letter for ${eventId}`)
      const json = letterJson(letter, true)
      if (ctx.json) {
        printJson(ctx, json)
        return 0
      }
      const { body, body_base64: _, headers, ...fields } = json
      out(ctx, keyValues({ ...fields, headers: show(headers) }))
      out(ctx, `\n${body as string}`)
      return 0
    })
  },
}

function outcomeLine(outcome: ReplayOutcome): string[] {
  if (outcome.status === 'failed') return [outcome.eventId, 'failed', `${outcome.error.code}: ${outcome.error.message}`]
  if (outcome.status === 'in_progress') {
    const wait = outcome.retryAfterMs === undefined ? '' : `retry in ${Math.ceil(outcome.retryAfterMs / 1000)} s`
    return [outcome.eventId, 'in_progress', wait]
  }
  return [outcome.eventId, outcome.status, '']
}

function outcomeJson(outcome: ReplayOutcome): Record<string, unknown> {
  const json: Record<string, unknown> = { event_id: outcome.eventId, status: outcome.status }
  if (outcome.status === 'failed') Object.assign(json, { error: outcome.error.code, message: outcome.error.message })
  if (outcome.status === 'in_progress' && outcome.retryAfterMs !== undefined) json.retry_after_ms = outcome.retryAfterMs
  return json
}

const SUCCEEDED = new Set(['processed', 'duplicate', 'queued'])

/** A replay of all in one line: what was tried and what came of it, and the letters that left the set meanwhile. */
function reportLine(report: ReplayReport): string {
  const parts = [
    [report.processed, 'processed'],
    [report.duplicate, 'duplicate'],
    [report.queued, 'queued'],
    [report.failed, 'failed (left parked)'],
    [report.inProgress, 'in progress elsewhere'],
    [report.notFound, 'not found'],
  ]
    .filter(([count]) => count)
    .map(([count, what]) => `${count} ${what}`)
  const of = report.total === undefined ? '' : ` of ${report.total}`
  const gone = report.gone ? `; ${report.gone} left the set meanwhile (deleted, replayed or parked again)` : ''
  return `Tried ${report.tried}${of}: ${parts.join(', ') || 'nothing'}${gone}.`
}

const replay: CommandSpec = {
  name: ['dead-letters', 'replay'],
  usage: '<event_id>... | --all [--event-type <type>] [--code <code>] --module <file>',
  summary: 'Replay dead letters: verify their bytes again and run their handlers, once',
  details: [
    "A receiver's letters are verified against its current secrets and schemas, then run under its",
    "store's claim: an event already handled is not run again (duplicate). A queue's letters go back to",
    'the queue (queued) for its workers. Exits 1 when a letter failed, was not found or is in progress.',
    ...MODULE_DETAILS,
  ],
  examples: [
    'payhooks dead-letters replay evt_123 --module ./dist/webhooks.js',
    'payhooks dead-letters replay --all --code schema_mismatch --module ./dist/webhooks.js',
  ],
  options: {
    module: moduleOption,
    all: { type: 'boolean', help: 'replay every parked letter (those matching the filters), oldest first' },
    concurrency: {
      type: 'string',
      arg: '<n>',
      help: 'with --all: letters replayed at once, outside the slots of live deliveries (default 4)',
    },
    ...filterOptions,
  },
  positionals: { min: 0, max: Number.POSITIVE_INFINITY, name: '<event_id>' },
  async run(ctx) {
    const all = ctx.values.all === true
    const filter = filterOf(ctx)
    if (all && ctx.positionals.length > 0) throw new UsageError('give event ids or --all, not both')
    if (!all && ctx.positionals.length === 0) throw new UsageError('missing <event_id> (or --all)')
    if (!all && Object.keys(filter).length > 0) throw new UsageError('--event-type and --code go with --all')
    const concurrency = ctx.values.concurrency === undefined ? undefined : Number(ctx.values.concurrency)
    if (concurrency !== undefined && (!all || !Number.isSafeInteger(concurrency) || concurrency < 1)) {
      throw new UsageError('--concurrency takes a whole number of 1 or more, with --all')
    }
    return withDeadLetters(ctx, async (deadLetters) => {
      const outcomes: ReplayOutcome[] = []
      let report: ReplayReport | undefined
      if (all) {
        const replayed = await deadLetters.replayAll(filter, concurrency ? { concurrency } : {})
        outcomes.push(...replayed)
        report = replayed.report
      } else for (const eventId of ctx.positionals) outcomes.push(await deadLetters.replay(eventId))
      if (ctx.json) printJson(ctx, outcomes.map(outcomeJson))
      else if (outcomes.length === 0) out(ctx, 'No parked dead letters to replay.')
      else out(ctx, table(['EVENT_ID', 'OUTCOME', 'DETAIL'], outcomes.map(outcomeLine)))
      if (report && !ctx.json) out(ctx, reportLine(report))
      return outcomes.every((outcome) => SUCCEEDED.has(outcome.status)) ? 0 : 1
    })
  },
}

export const deadLetterCommands = [list, showCommand, replay]
