// `payhooks pause`, `resume` and `paused`: the pauses of the user's receiver, through its module.
import type { Pause, ResumeOptions, ResumeResult } from '@payhooks/core'
import { CommandFailed, type Context, out, printJson, stringValue, UsageError } from '../context.js'
import type { CommandSpec } from '../spec.js'
import { importModule, moduleOption } from '../user-module.js'
import { reportJson, reportLines } from './dead-letters-replay.js'

interface Pausable {
  pause(eventType: string, options?: { reason?: string }): Promise<Pause>
  resume(eventType: string, options?: ResumeOptions): Promise<ResumeResult>
  paused(): Promise<Pause[]>
  close?(): Promise<void>
}

const DETAILS = [
  'The commands reach your pauses through a module of yours, run in this process, that exports the',
  'receiver built by createWebhooks({ pauses, ... }) (as default, or as `webhooks`). Give it a shared pause',
  'store (redisPauseStore, postgresPauseStore): with the default, memoryPauseStore, a pause made here',
  'stops nothing but this process. Every receiver sharing the store honours a pause within about a second.',
  'An exported `close()` is called at the end.',
]

const isPausable = (value: unknown): value is Pausable =>
  typeof value === 'object' &&
  value !== null &&
  ['pause', 'resume', 'paused'].every((name) => typeof (value as Record<string, unknown>)[name] === 'function')

/** Runs `work` with the module's receiver, then closes what the module opened. */
async function withReceiver(ctx: Context, work: (webhooks: Pausable) => Promise<number>): Promise<number> {
  const { file, exports } = await importModule(ctx)
  const webhooks = ['default', 'webhooks'].map((name) => exports[name]).find(isPausable)
  if (!webhooks) {
    throw new UsageError(`${file} exports no receiver: export default the receiver built by createWebhooks({ pauses })`)
  }
  try {
    return await work(webhooks)
  } catch (error) {
    if (error instanceof UsageError || error instanceof TypeError) throw new UsageError(error.message)
    const message = error instanceof Error ? error.message : String(error)
    throw new CommandFailed(message.split('\n')[0] ?? message)
  } finally {
    await webhooks.close?.()
    if (typeof exports.close === 'function') await (exports.close as () => Promise<void>)()
  }
}

const pauseJson = (pause: Pause) => ({
  event_type: pause.eventType,
  reason: pause.reason,
  since: pause.since.toISOString(),
  by: pause.by ?? null,
})

const typeWords = (eventType: string) => (eventType === '*' ? 'every event type' : eventType)

const pause: CommandSpec = {
  name: ['pause'],
  usage: "<event_type | '*'> --reason <text> --module <file>",
  summary: 'Pause an event type on every receiver: its deliveries are parked (or answered 503) until resumed',
  details: [
    'While paused, a delivery of the type is verified, then parked as a `paused` dead letter with a durable',
    'deadLetters store (answered 200 parked; resume replays it), else answered 503 paused so the service',
    "retries it (for 72 hours from the event's creation: a warning is logged 24 hours before). Other types",
    "run as usual; handlers already running finish. '*' pauses every type.",
    ...DETAILS,
  ],
  examples: ["payhooks pause transaction_settled --reason 'ledger migration until 02:00' --module ./dist/webhooks.js"],
  options: {
    module: moduleOption,
    reason: { type: 'string', arg: '<text>', help: 'why, one line, shown to the other operators' },
  },
  positionals: { min: 1, max: 1, name: '<event_type>' },
  run(ctx) {
    const eventType = ctx.positionals[0] as string
    const reason = stringValue(ctx, 'reason') ?? ''
    return withReceiver(ctx, async (webhooks) => {
      const paused = await webhooks.pause(eventType, { reason })
      if (ctx.json) printJson(ctx, pauseJson(paused))
      else {
        out(
          ctx,
          `Paused ${typeWords(eventType)} since ${paused.since.toISOString()}${reason ? ` (${reason})` : ''}: every receiver sharing the pause store honours it within about a second. Resume with: payhooks resume ${eventType === '*' ? "'*'" : eventType}`,
        )
      }
      return 0
    })
  },
}

const resume: CommandSpec = {
  name: ['resume'],
  usage: "<event_type | '*'> --module <file> [--no-replay]",
  summary: 'Resume a paused event type, then replay the letters parked while it was paused',
  details: [
    "Lifts the pause, waits until every receiver has seen it (two of the store's refreshMs), then replays",
    "the type's `paused` dead letters through the module's receiver: each once, a few at a time, giving way",
    "to live deliveries, and prints the run's report. --no-replay leaves them for",
    "payhooks dead-letters replay --all --code paused. '*' lifts the pause of every type, not a type's own.",
    ...DETAILS,
  ],
  examples: ['payhooks resume transaction_settled --module ./dist/webhooks.js'],
  options: {
    module: moduleOption,
    'no-replay': { type: 'boolean', help: 'lift the pause only; replay nothing' },
  },
  positionals: { min: 1, max: 1, name: '<event_type>' },
  run(ctx) {
    const eventType = ctx.positionals[0] as string
    const replay = ctx.values['no-replay'] !== true
    return withReceiver(ctx, async (webhooks) => {
      const result = await webhooks.resume(eventType, { replay })
      if (ctx.json) {
        printJson(ctx, { resumed: result.resumed, replay: result.replay ? reportJson(result.replay) : null })
        return 0
      }
      out(ctx, result.resumed ? `Resumed ${typeWords(eventType)}.` : `${typeWords(eventType)} was not paused.`)
      if (result.replay) out(ctx, reportLines(result.replay))
      return result.replay && result.replay.failed > 0 ? 1 : 0
    })
  },
}

const paused: CommandSpec = {
  name: ['paused'],
  usage: '--module <file> [--json]',
  summary: 'List the event types paused now, with since when, why and by which instance',
  details: DETAILS,
  examples: ['payhooks paused --module ./dist/webhooks.js'],
  options: { module: moduleOption },
  positionals: { min: 0, max: 0 },
  run(ctx) {
    return withReceiver(ctx, async (webhooks) => {
      const pauses = await webhooks.paused()
      if (ctx.json) printJson(ctx, { paused: pauses.map(pauseJson) })
      else if (pauses.length === 0) out(ctx, 'Nothing is paused.')
      else {
        for (const pause of pauses) {
          out(
            ctx,
            `${typeWords(pause.eventType)}  paused since ${pause.since.toISOString()}${pause.by ? ` by ${pause.by}` : ''}${pause.reason ? `: ${pause.reason}` : ''}`,
          )
        }
      }
      return 0
    })
  },
}

export const pauseCommands: CommandSpec[] = [pause, resume, paused]
