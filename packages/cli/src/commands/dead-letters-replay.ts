// `payhooks dead-letters replay`: letters by id, or every one matching the filters (`--all`) in batches, with its
// progress on stderr and the run's report.
import type { DeadLetterFilter, DeadLetters, ReplayBatch, ReplayOutcome, ReplayReport } from '@payhooks/core'
import { type Context, out, printJson, UsageError, warn } from '../context.js'
import { table } from '../format.js'
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

/** Letters a batch of `--all` tries: a progress line at most this far apart. */
const BATCH = 500
/** Progress lines at most this often (the last one always). */
const PROGRESS_MS = 1000

function outcomeLine(outcome: ReplayOutcome): string[] {
  if (outcome.status === 'failed') return [outcome.eventId, 'failed', `${outcome.error.code}: ${outcome.error.message}`]
  if (outcome.status === 'in_progress') {
    const wait = outcome.retryAfterMs === undefined ? '' : `retry in ${Math.ceil(outcome.retryAfterMs / 1000)} s`
    return [outcome.eventId, 'in_progress', wait]
  }
  if (outcome.status === 'duplicate' && outcome.handledAt) {
    return [outcome.eventId, 'duplicate', `handled ${outcome.handledAt.toISOString()}`]
  }
  return [outcome.eventId, outcome.status, '']
}

function outcomeJson(outcome: ReplayOutcome): Record<string, unknown> {
  const json: Record<string, unknown> = { event_id: outcome.eventId, status: outcome.status }
  if (outcome.status === 'failed') Object.assign(json, { error: outcome.error.code, message: outcome.error.message })
  if (outcome.status === 'in_progress' && outcome.retryAfterMs !== undefined) json.retry_after_ms = outcome.retryAfterMs
  if (outcome.status === 'duplicate' && outcome.handledAt) json.handled_at = outcome.handledAt.toISOString()
  return json
}

const SUCCEEDED = new Set(['processed', 'duplicate', 'queued'])

/** The duplicates of a run that no record dated: handled before it, or meanwhile, nobody can say. */
const undated = (report: ReplayReport) =>
  Math.max(0, report.duplicate - (report.duplicateMeanwhile ?? 0) - (report.duplicateBefore ?? 0))

/** A run's report as JSON: every figure, `null` where the run could not tell. */
export function reportJson(report: ReplayReport): Record<string, number | boolean | null> {
  return {
    tried: report.tried,
    processed: report.processed,
    duplicate: report.duplicate,
    duplicate_meanwhile: report.duplicateMeanwhile ?? 0,
    duplicate_before: report.duplicateBefore ?? 0,
    duplicate_undated: undated(report),
    queued: report.queued,
    in_progress: report.inProgress,
    failed: report.failed,
    not_found: report.notFound,
    gone: report.gone ?? null,
    remaining: report.remaining ?? null,
    total: report.total ?? null,
    done: report.done,
  }
}

/** What became of the duplicates: replayed by someone else meanwhile, handled before, or not dated by any record. */
function duplicateWords(report: ReplayReport): string {
  const parts = [
    [report.duplicateMeanwhile ?? 0, 'handled meanwhile by another replay or delivery (another operator, a console)'],
    [report.duplicateBefore ?? 0, 'handled before this run started'],
    [
      undated(report),
      'handled before, at a time no record keeps (only the done marker says so; with a journal on the receiver, createWebhooks({ journal }), the run tells before from meanwhile)',
    ],
  ] as const
  const said = parts.filter(([n]) => n > 0).map(([n, what]) => `${figure(n)} ${what}`)
  return said.length > 0 ? `: ${said.join('; ')}` : ''
}

/** A run's report for people: one figure a line, the duplicates explained. */
export function reportLines(report: ReplayReport): string {
  const of = report.total === undefined ? '' : ` of ${figure(report.total)}`
  const rows: [string, string][] = [
    ['tried', `${figure(report.tried)}${of}`],
    ['processed', figure(report.processed)],
    ['duplicate', `${figure(report.duplicate)}${duplicateWords(report)}`],
  ]
  if (report.queued) rows.push(['queued', `${figure(report.queued)} (handed back to the queue's workers)`])
  if (report.inProgress) rows.push(['in progress', `${figure(report.inProgress)} (handled elsewhere: still parked)`])
  rows.push(['failed', `${figure(report.failed)}${report.failed ? ' (left parked: replay them once fixed)' : ''}`])
  if (report.notFound) rows.push(['not found', figure(report.notFound)])
  rows.push([
    'gone',
    report.gone === undefined
      ? 'unknown'
      : `${figure(report.gone)}${report.gone ? ' (left the set meanwhile: replayed, deleted or parked again elsewhere)' : ''}`,
  ])
  rows.push(['remaining', report.remaining === undefined ? 'unknown' : figure(report.remaining)])
  const width = Math.max(...rows.map(([name]) => name.length))
  return [
    `Replay of all matching ${report.done ? 'done' : 'stopped'}:`,
    ...rows.map(([n, v]) => `  ${n.padEnd(width)}  ${v}`),
  ].join('\n')
}

function progressLine(run: ReplayReport): string {
  const of = run.total === undefined ? '' : ` of ${figure(run.total)}`
  const more = [
    [run.queued, 'queued'],
    [run.failed, 'failed'],
    [run.inProgress, 'in progress elsewhere'],
  ]
    .filter(([n]) => n)
    .map(([n, what]) => `, ${figure(n as number)} ${what}`)
    .join('')
  return `${figure(run.tried)}${of} tried: ${figure(run.processed)} processed, ${figure(run.duplicate)} duplicate${more}`
}

/** Replays every letter matching `filter`, batch after batch, telling the progress on stderr (not with --json). */
async function replayMatching(
  ctx: Context,
  deadLetters: DeadLetters,
  filter: DeadLetterFilter,
  concurrency: number | undefined,
): Promise<{ outcomes: ReplayOutcome[]; report: ReplayReport | undefined }> {
  const { replayBatch } = deadLetters
  if (!replayBatch) {
    const outcomes = await deadLetters.replayAll(filter, concurrency ? { concurrency } : {})
    return { outcomes: [...outcomes], report: outcomes.report }
  }
  const outcomes: ReplayOutcome[] = []
  let cursor: string | null | undefined
  let last: ReplayBatch | undefined
  let told = 0
  do {
    last = await replayBatch.call(deadLetters, {
      filter,
      cursor,
      limit: BATCH,
      ...(concurrency ? { concurrency } : {}),
    })
    // Nothing on stderr for a run of nothing: stdout says so.
    const quiet = ctx.json || last.run.total === 0
    if (!cursor && !quiet && last.run.total !== undefined) {
      warn(ctx, `replaying ${figure(last.run.total)} letter${last.run.total === 1 ? '' : 's'}, oldest first`)
    }
    outcomes.push(...last.outcomes)
    cursor = last.cursor
    if (!quiet && (cursor === null || Date.now() - told >= PROGRESS_MS)) {
      warn(ctx, progressLine(last.run))
      told = Date.now()
    }
  } while (cursor)
  return { outcomes, report: last.run }
}

export const replay: CommandSpec = {
  name: ['dead-letters', 'replay'],
  usage: '<event_id>... | --all [filters] [--dry-run] --module <file>',
  summary: 'Replay dead letters: verify their bytes again and run their handlers, once',
  details: [
    "A receiver's letters are verified against its current secrets and schemas, then run under its",
    "store's claim: an event already handled is not run again (duplicate). A queue's letters go back to",
    'the queue (queued) for its workers. Exits 1 when a letter failed, was not found or is in progress.',
    '',
    'With --all: every parked letter matching the filters when the run starts, oldest first, each once,',
    'in batches of 500 (progress on stderr), then the report: tried, processed, duplicate (handled',
    'meanwhile by another replay, or before the run), failed (left parked), gone, remaining; the letters',
    'not handled are listed. --dry-run prints the count first and replays nothing. With --json, the',
    'report and every outcome as one object.',
    ...TIME_DETAILS,
    ...MODULE_DETAILS,
  ],
  examples: [
    'payhooks dead-letters replay evt_123 --module ./dist/webhooks.js',
    'payhooks dead-letters replay --all --code schema_mismatch --module ./dist/webhooks.js',
    'payhooks dead-letters replay --all --parked-after 2026-11-28T02:00Z --parked-before 2026-11-28T05:00Z --dry-run --module ./dist/webhooks.js',
    'payhooks dead-letters replay --all --created-after 2026-11-28T02:00Z --created-before 2026-11-28T05:00Z --module ./dist/webhooks.js',
  ],
  options: {
    module: moduleOption,
    all: { type: 'boolean', help: 'replay every parked letter (those matching the filters), oldest first' },
    'dry-run': { type: 'boolean', help: 'with --all: print how many letters match, and replay none' },
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
    const dryRun = ctx.values['dry-run'] === true
    const filter = filterOf(ctx)
    if (all && ctx.positionals.length > 0) throw new UsageError('give event ids or --all, not both')
    if (!all && ctx.positionals.length === 0) throw new UsageError('missing <event_id> (or --all)')
    if (!all && Object.keys(filter).length > 0) {
      throw new UsageError('--event-type, --code and the time windows go with --all')
    }
    if (!all && dryRun) throw new UsageError('--dry-run goes with --all')
    const concurrency = ctx.values.concurrency === undefined ? undefined : Number(ctx.values.concurrency)
    if (concurrency !== undefined && (!all || !Number.isSafeInteger(concurrency) || concurrency < 1)) {
      throw new UsageError('--concurrency takes a whole number of 1 or more, with --all')
    }
    return withDeadLetters(ctx, async (deadLetters) => {
      if (dryRun) {
        const matching = await countMatching(deadLetters, { ...filter, status: 'parked' })
        if (ctx.json) printJson(ctx, { dry_run: true, count: matching, filter: filterJson(filter) })
        else {
          out(
            ctx,
            `${figure(matching)} parked dead letter${matching === 1 ? ' matches' : 's match'}: replay --all would try ${matching === 1 ? 'it' : 'them'}, oldest first. Nothing replayed (--dry-run).`,
          )
        }
        return 0
      }
      let outcomes: ReplayOutcome[] = []
      let report: ReplayReport | undefined
      if (all) ({ outcomes, report } = await replayMatching(ctx, deadLetters, filter, concurrency))
      else for (const eventId of ctx.positionals) outcomes.push(await deadLetters.replay(eventId))
      const succeeded = outcomes.every((outcome) => SUCCEEDED.has(outcome.status))
      if (ctx.json) {
        printJson(
          ctx,
          all
            ? { report: report ? reportJson(report) : null, outcomes: outcomes.map(outcomeJson) }
            : outcomes.map(outcomeJson),
        )
      } else if (outcomes.length === 0) out(ctx, 'No parked dead letters to replay.')
      else if (!all) out(ctx, table(['EVENT_ID', 'OUTCOME', 'DETAIL'], outcomes.map(outcomeLine)))
      else {
        // At volume the handled letters are the report's figures; those not handled are listed by id.
        const left = outcomes.filter((outcome) => !SUCCEEDED.has(outcome.status))
        if (left.length > 0) out(ctx, `${table(['EVENT_ID', 'OUTCOME', 'DETAIL'], left.map(outcomeLine))}\n`)
        if (report) out(ctx, reportLines(report))
      }
      return succeeded ? 0 : 1
    })
  },
}
