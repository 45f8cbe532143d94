import type { Events, JournalAnswer, JournalGap } from '@payhooks/core'
import { CommandFailed, type Context, integerValue, out, printJson, stringValue, UsageError } from '../context.js'
import { keyValues, table } from '../format.js'
import type { CommandSpec } from '../spec.js'
import { importModule, moduleOption } from '../user-module.js'

const MODULE_DETAILS = [
  'The commands read the journal through a module of yours, run in this process, that exports the',
  'receiver built by createWebhooks({ journal, ... }) (as default, or as `webhooks`); with a shared',
  'journal (redisJournal, postgresJournal) they see what every instance answered. An exported',
  '`close()` is called at the end.',
]

const isEvents = (value: unknown): value is Events =>
  typeof value === 'object' && value !== null && typeof (value as Events).get === 'function' && 'enabled' in value

/** Runs `work` with the module's receiver's journal, then closes what the module opened. */
async function withEvents(ctx: Context, work: (events: Events) => Promise<number>): Promise<number> {
  const { file, exports } = await importModule(ctx)
  const receiver = ['default', 'webhooks']
    .map((name) => exports[name] as { events?: unknown; close?: () => Promise<void> } | undefined)
    .find((value) => isEvents(value?.events))
  const events = receiver?.events as Events | undefined
  const closeModule = exports.close
  try {
    if (!events) throw new UsageError(`${file} exports no receiver: export default the one built by createWebhooks()`)
    if (!events.enabled) {
      throw new UsageError(`${file}'s receiver has no journal: createWebhooks({ journal: redisJournal(redis) })`)
    }
    return await work(events)
  } catch (error) {
    if (error instanceof UsageError || error instanceof CommandFailed) throw error
    if (error instanceof TypeError || error instanceof RangeError) throw new UsageError(error.message)
    throw new CommandFailed((error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '')
  } finally {
    await receiver?.close?.().catch(() => {})
    if (typeof closeModule === 'function') await (closeModule as () => Promise<void>)().catch(() => {})
  }
}

const UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `--name`: a span back from now (`90s`, `15m`, `1h`, `2d`) or an ISO 8601 time. */
function timeValue(ctx: Context, name: string, now: number): Date | undefined {
  const text = stringValue(ctx, name)
  if (text === undefined) return undefined
  const span = /^(\d+)([smhd])$/.exec(text)
  const date = span ? new Date(now - Number(span[1]) * (UNITS[span[2] as string] as number)) : new Date(text)
  if (Number.isNaN(date.getTime())) throw new UsageError(`--${name} must be a span such as 1h, 15m, 2d, or an ISO time`)
  return date
}

const secretOf = ({ verifiedWith }: JournalAnswer) =>
  verifiedWith.label === undefined ? String(verifiedWith.index) : `${verifiedWith.index} (${verifiedWith.label})`

function answerJson(answer: JournalAnswer): Record<string, unknown> {
  return {
    at: answer.at.toISOString(),
    status: answer.status,
    outcome: answer.outcome,
    instance: answer.instance,
    duration_ms: answer.durationMs,
    verified_with: answer.verifiedWith,
    copies: answer.copies ?? 1,
  }
}

const gapJson = (gap: JournalGap) => ({
  from: gap.from.toISOString(),
  to: gap.to.toISOString(),
  instance: gap.instance,
  dropped: gap.dropped,
})

const gapLine = (gap: JournalGap) =>
  `${gap.dropped} answers dropped by ${gap.instance} from ${gap.from.toISOString()} to ${gap.to.toISOString()}`

/** The spans, within retention, in which an instance dropped answers of any event (for an id without answers). */
async function gapsKept(events: Events): Promise<JournalGap[]> {
  const { answers } = await events.list({ outcome: 'journal_gap', limit: 20 })
  return [...answers].reverse().map((gap) => ({
    from: gap.at,
    to: new Date(gap.at.getTime() + gap.durationMs),
    instance: gap.instance,
    dropped: gap.copies ?? 1,
  }))
}

const showCommand: CommandSpec = {
  name: ['events', 'show'],
  usage: '<event_id> --module <file> [--json]',
  summary: 'Show what the fleet answered for one event: every answer, its instance and duration',
  details: ['Exits 1 when the journal has no answer for the id.', ...MODULE_DETAILS],
  examples: ['payhooks events show evt_123 --module ./dist/webhooks.js'],
  options: { module: moduleOption },
  positionals: { min: 1, max: 1, name: '<event_id>' },
  async run(ctx) {
    const eventId = ctx.positionals[0] as string
    return withEvents(ctx, async (events) => {
      const timeline = await events.get(eventId)
      if (!timeline) {
        const gaps = await gapsKept(events)
        const maybe = gaps.length
          ? `; answers were dropped (it may be among them): ${gaps.map(gapLine).join('; ')}`
          : ''
        throw new CommandFailed(`no answer journaled for ${eventId}${maybe}`)
      }
      const gaps = timeline.gaps ?? []
      const fields = {
        event_id: timeline.eventId,
        event_type: timeline.eventType,
        created_at: timeline.createdAt,
        handled_at: timeline.handledAt?.toISOString() ?? null,
      }
      if (ctx.json) {
        printJson(ctx, { ...fields, answers: timeline.answers.map(answerJson), gaps: gaps.map(gapJson) })
        return 0
      }
      out(ctx, keyValues({ ...fields, handled_at: fields.handled_at ?? 'not handled' }))
      const rows = timeline.answers.map((a) => [
        a.at.toISOString(),
        String(a.status),
        (a.copies ?? 1) > 1 ? `${a.outcome} x${a.copies}` : a.outcome,
        a.instance,
        String(a.durationMs),
        secretOf(a),
      ])
      out(ctx, `\n${table(['AT', 'STATUS', 'OUTCOME', 'INSTANCE', 'DURATION_MS', 'SECRET'], rows)}`)
      if (gaps.length) out(ctx, `\nanswers may be missing: ${gaps.map(gapLine).join('; ')}`)
      return 0
    })
  },
}

const list: CommandSpec = {
  name: ['events', 'list'],
  usage: '--module <file> [--outcome <outcome>] [--event-type <type>] [--since <span>] [options]',
  summary: 'List answers the fleet gave, newest first, filtered by outcome, type and time',
  details: [
    'A page at a time (--limit, default 50); the next page is printed as a --cursor to pass back.',
    ...MODULE_DETAILS,
  ],
  examples: [
    'payhooks events list --module ./dist/webhooks.js --outcome handler_failed --since 1h',
    'payhooks events list --module ./dist/webhooks.js --event-type transaction_settled --limit 20 --json',
  ],
  options: {
    module: moduleOption,
    outcome: { type: 'string', arg: '<outcome>', help: 'only answers of this outcome: handler_failed, processed...' },
    'event-type': { type: 'string', arg: '<type>', help: 'only answers to events of this type' },
    since: { type: 'string', arg: '<span|time>', help: 'only answers since then: 15m, 1h, 2d or an ISO time' },
    until: { type: 'string', arg: '<span|time>', help: 'only answers before then' },
    limit: { type: 'string', arg: '<n>', help: 'at most this many (1 to 1000, default 50)' },
    cursor: { type: 'string', arg: '<cursor>', help: 'the next page, as a previous page printed it' },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const now = Date.now()
    const query = {
      outcome: stringValue(ctx, 'outcome'),
      eventType: stringValue(ctx, 'event-type'),
      from: timeValue(ctx, 'since', now),
      to: timeValue(ctx, 'until', now),
      limit: integerValue(ctx, 'limit', { min: 1, max: 1000 }),
      cursor: stringValue(ctx, 'cursor'),
    }
    const defined = Object.fromEntries(Object.entries(query).filter(([, value]) => value !== undefined))
    return withEvents(ctx, async (events) => {
      const page = await events.list(defined)
      if (ctx.json) {
        printJson(ctx, {
          answers: page.answers.map((a) => ({
            event_id: a.eventId,
            event_type: a.eventType,
            created_at: a.createdAt,
            ...answerJson(a),
          })),
          cursor: page.cursor ?? null,
          searched_from: page.searchedFrom?.toISOString() ?? null,
        })
        return 0
      }
      if (page.answers.length === 0) {
        // A list by event type searched back to `searchedFrom` only: the cursor searches on.
        const since = page.searchedFrom ? ` since ${page.searchedFrom.toISOString()}` : ''
        out(ctx, `No answers journaled match${since}.${page.cursor ? `\nmore: --cursor ${page.cursor}` : ''}`)
        return 0
      }
      const rows = page.answers.map((a) => [
        a.at.toISOString(),
        a.eventId,
        a.eventType,
        String(a.status),
        (a.copies ?? 1) > 1 ? `${a.outcome} x${a.copies}` : a.outcome,
        a.instance,
        String(a.durationMs),
      ])
      out(ctx, table(['AT', 'EVENT_ID', 'EVENT_TYPE', 'STATUS', 'OUTCOME', 'INSTANCE', 'DURATION_MS'], rows))
      if (page.cursor) out(ctx, `\nmore: --cursor ${page.cursor}`)
      return 0
    })
  },
}

export const eventCommands = [showCommand, list]
