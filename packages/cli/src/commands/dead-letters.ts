import { type DeadLetter, type DeadLetterQuery, deadLetterCursor } from '@payhooks/core'
import { CommandFailed, integerValue, out, printJson, stringValue, UsageError } from '../context.js'
import { keyValues, show, table } from '../format.js'
import type { CommandSpec } from '../spec.js'
import { moduleOption } from '../user-module.js'
import {
  countMatching,
  figure,
  filterJson,
  filterOf,
  filterOptions,
  MODULE_DETAILS,
  TIME_DETAILS,
  withDeadLetters,
} from './dead-letters-module.js'
import { replay } from './dead-letters-replay.js'

// `prove --module` loads the module's dead letters the same way.
export { type Loaded, loadDeadLetters } from './dead-letters-module.js'

const STATUSES = ['parked', 'replayed', 'all'] as const

function statusOf(value: string | undefined): NonNullable<DeadLetterQuery['status']> {
  const status = value ?? 'parked'
  if (!(STATUSES as readonly string[]).includes(status))
    throw new UsageError('--status must be parked, replayed or all')
  return status as NonNullable<DeadLetterQuery['status']>
}

/** `parked dead letters`, `1 replayed dead letter`: what a count is of. */
const statusWords = (status: string, n = 2) => `${status === 'all' ? '' : `${status} `}dead letter${n === 1 ? '' : 's'}`

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
  details: [
    'Newest first; parked ones by default (--status replayed or all for the others), 100 a page: the last',
    'line says how many match in all and the --after that shows the next page (each page costs the same,',
    'however deep).',
    ...TIME_DETAILS,
    ...MODULE_DETAILS,
  ],
  examples: [
    'payhooks dead-letters list --module ./dist/webhooks.js',
    'payhooks dead-letters list --module ./dist/webhooks.js --code schema_mismatch --limit 20 --json',
    'payhooks dead-letters list --module ./dist/webhooks.js --created-after 2026-11-28T02:00Z --created-before 2026-11-28T05:00Z',
  ],
  options: {
    module: moduleOption,
    ...filterOptions,
    status: { type: 'string', arg: '<status>', help: 'parked (default), replayed or all' },
    limit: { type: 'string', arg: '<n>', help: 'at most this many (default 100)' },
    after: { type: 'string', arg: '<cursor>', help: 'the next page: the --after the page before printed' },
    offset: { type: 'string', arg: '<n>', help: 'skip this many first (default 0; costs grow with it: use --after)' },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const filter = filterOf(ctx)
    const status = statusOf(stringValue(ctx, 'status'))
    const limit = integerValue(ctx, 'limit', { min: 1, max: 100_000 }) ?? 100
    const offset = integerValue(ctx, 'offset', { min: 0, max: Number.MAX_SAFE_INTEGER }) ?? 0
    const after = stringValue(ctx, 'after')
    return withDeadLetters(ctx, async (deadLetters) => {
      const query = { ...filter, status, offset, ...(after ? { after } : {}) }
      const found = await deadLetters.list({ ...query, limit: ctx.json ? limit : limit + 1 })
      const letters = found.slice(0, limit)
      if (ctx.json) {
        printJson(
          ctx,
          letters.map((letter) => letterJson(letter, false)),
        )
        return 0
      }
      const more = found.length > limit
      const later = offset > 0 || after !== undefined
      if (letters.length === 0) {
        out(ctx, later ? `No more ${statusWords(status)}.` : `No ${statusWords(status)}.`)
        return 0
      }
      const rows = letters.map((l) => [
        l.eventId,
        l.eventType,
        l.code,
        l.status,
        l.parkedAt.toISOString(),
        l.createdAt?.toISOString() ?? '-',
        String(l.parkCount),
        l.reason,
      ])
      out(ctx, table(['EVENT_ID', 'EVENT_TYPE', 'CODE', 'STATUS', 'PARKED_AT', 'CREATED_AT', 'COUNT', 'REASON'], rows))
      // Counted only when there is more to see, or this is not the first page: a single page says it all.
      const total = more || later ? await countMatching(deadLetters, { ...filter, status }) : letters.length
      const last = letters[letters.length - 1] as DeadLetter
      const next = more ? ` Next page: --after ${deadLetterCursor(last)}` : ''
      const shown = `${figure(letters.length)}${later ? ' more' : ''}`
      out(ctx, `\n${shown} of ${figure(total)} ${statusWords(status, total)}, newest first.${next}`)
      return 0
    })
  },
}

const count: CommandSpec = {
  name: ['dead-letters', 'count'],
  usage: '--module <file> [options]',
  summary: 'Count dead letters matching the filters, without reading them',
  details: [
    'Parked ones by default (--status replayed or all for the others). The count a replay --all of the',
    "same filters would start from (replay --all --dry-run prints it too). Counts come from the store's",
    'indexes: the same time at 100 letters or 100,000.',
    ...TIME_DETAILS,
    ...MODULE_DETAILS,
  ],
  examples: [
    'payhooks dead-letters count --module ./dist/webhooks.js',
    'payhooks dead-letters count --module ./dist/webhooks.js --code handler_failed --parked-after 6h --json',
  ],
  options: {
    module: moduleOption,
    ...filterOptions,
    status: { type: 'string', arg: '<status>', help: 'parked (default), replayed or all' },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const filter = filterOf(ctx)
    const status = statusOf(stringValue(ctx, 'status'))
    return withDeadLetters(ctx, async (deadLetters) => {
      const matching = await countMatching(deadLetters, { ...filter, status })
      if (ctx.json) printJson(ctx, { count: matching, status, filter: filterJson(filter) })
      else out(ctx, `${figure(matching)} ${statusWords(status, matching)} match${matching === 1 ? 'es' : ''}.`)
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

export const deadLetterCommands = [list, count, showCommand, replay]
