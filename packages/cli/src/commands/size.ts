import { type Context, out, printJson, UsageError } from '../context.js'
import {
  BYTES,
  DEFAULT_JOURNAL_DAYS,
  DEFAULT_RETENTION_HOURS,
  estimate,
  gigabytes,
  type Sizing,
  type SizingStore,
} from '../sizing.js'
import type { CommandSpec } from '../spec.js'

/** `--name`'s value as a number above 0 (and at most `max`), or `fallback` when absent. */
function positive(ctx: Context, name: string, fallback: number | undefined, max: number): number {
  const text = ctx.values[name]
  if (text === undefined) {
    if (fallback === undefined) throw new UsageError(`--${name} is required`)
    return fallback
  }
  const value = typeof text === 'string' && /^\d+(\.\d+)?$/.test(text) ? Number(text) : Number.NaN
  if (!(value > 0 && value <= max)) throw new UsageError(`--${name} must be a number above 0, at most ${max}`)
  return value
}

const bytes = (n: number) => `${Math.round(n).toLocaleString('en')} B`

function describe(sizing: Sizing, journal: boolean): string {
  const name = sizing.store === 'redis' ? 'Redis' : 'PostgreSQL'
  const parts = [`markers ${gigabytes(sizing.markers)} (${bytes(sizing.perEvent)} an event)`]
  if (journal) parts.push(`journal ${gigabytes(sizing.journal)} (${bytes(sizing.perAnswer)} an answer)`)
  return `  ${name.padEnd(11)} ${gigabytes(sizing.total).padStart(9)}   ${parts.join(' + ')}`
}

const sizeCommand: CommandSpec = {
  name: ['size'],
  usage:
    '--rate <events/s> [--ordered] [--journal] [--store redis|postgres] [--retention-hours <h>] [--journal-days <d>] [--answers-per-event <n>]',
  summary: 'estimate the memory (Redis) or disk (PostgreSQL) a fleet keeps, from the benches’ figures',
  details: [
    'Done markers (and fences, with --ordered: one ordering key per event, the worst case) kept for',
    '--retention-hours, plus, with --journal, its answers kept --journal-days. Redis: used_memory, so leave',
    'maxmemory headroom above it; PostgreSQL: tables and indexes after VACUUM. The figures per event are',
    'those of docs/guide/capacity.md; rerun the benches on your data where it matters.',
  ],
  examples: ['payhooks size --rate 50 --ordered --journal', 'payhooks size --rate 200 --store redis --journal-days 3'],
  options: {
    rate: { type: 'string', arg: '<events/s>', help: 'events handled per second' },
    ordered: { type: 'boolean', help: 'events carry an ordering key (one key per event)' },
    journal: { type: 'boolean', help: 'the journal is on' },
    store: { type: 'string', arg: '<redis|postgres>', help: 'one store only (default both)' },
    'retention-hours': {
      type: 'string',
      arg: '<h>',
      help: `how long the store keeps done markers (default ${DEFAULT_RETENTION_HOURS})`,
    },
    'journal-days': {
      type: 'string',
      arg: '<d>',
      help: `how long the journal keeps answers (default ${DEFAULT_JOURNAL_DAYS})`,
    },
    'answers-per-event': { type: 'string', arg: '<n>', help: 'journal answers per event (default 1)' },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const rate = positive(ctx, 'rate', undefined, 1_000_000)
    const retentionHours = positive(ctx, 'retention-hours', DEFAULT_RETENTION_HOURS, 24 * 366)
    const journalDays = positive(ctx, 'journal-days', DEFAULT_JOURNAL_DAYS, 366)
    const answersPerEvent = positive(ctx, 'answers-per-event', 1, 1000)
    const store = ctx.values.store
    if (store !== undefined && store !== 'redis' && store !== 'postgres') {
      throw new UsageError('--store must be redis or postgres')
    }
    const ordered = ctx.values.ordered === true
    const journal = ctx.values.journal === true
    const stores: SizingStore[] = store === undefined ? ['redis', 'postgres'] : [store]
    const sizings = stores.map((s) =>
      estimate({ store: s, rate, ordered, journal, retentionHours, journalDays, answersPerEvent }),
    )
    if (ctx.json) {
      printJson(ctx, {
        rate,
        ordered,
        journal,
        retentionHours,
        journalDays,
        answersPerEvent,
        estimates: sizings.map((s) => ({ ...s, source: BYTES[s.store].source })),
      })
      return 0
    }
    const what = [
      `${rate.toLocaleString('en')} events/s`,
      ordered ? 'ordered' : 'unordered',
      `markers kept ${retentionHours} h`,
      journal
        ? `journal kept ${journalDays} days (${answersPerEvent} answer${answersPerEvent === 1 ? '' : 's'} an event)`
        : 'no journal',
    ]
    out(ctx, `${what.join(', ')}:`)
    for (const sizing of sizings) out(ctx, describe(sizing, journal))
    return 0
  },
}

export const sizeCommands: CommandSpec[] = [sizeCommand]
