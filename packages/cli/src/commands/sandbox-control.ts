// `payhooks sandbox advance` and `payhooks sandbox emit`: the control routes of a running sandbox.
import { CommandFailed, type Context, integerValue, out, printJson, stringValue, UsageError, warn } from '../context.js'
import { ALLOW_UNKNOWN, allowUnknownOption, checkEventTypes } from '../event-types.js'
import type { CommandSpec, OptionSpec } from '../spec.js'

const DEFAULT_BASE_URL = 'http://127.0.0.1:4010'

/** Where the sandbox is and how to get in: shared by the control commands. */
export const controlOptions: Record<string, OptionSpec> = {
  'base-url': {
    type: 'string',
    arg: '<url>',
    env: 'PAYHOOKS_BASE_URL',
    help: `address of the running sandbox (default ${DEFAULT_BASE_URL})`,
  },
  token: {
    type: 'string',
    arg: '<token>',
    env: 'PAYHOOKS_SANDBOX_TOKEN',
    help: 'control token the sandbox printed (needed when it listens beyond loopback)',
  },
  'timeout-ms': { type: 'string', arg: '<ms>', help: 'give up after this long (default 120000)' },
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** `1h`, `90m`, `1h30m`, `45s`, `500ms`, `3d` → milliseconds; undefined when not such a duration. */
export function parseDuration(text: string): number | undefined {
  if (!/^(\d+(ms|s|m|h|d))+$/.test(text)) return undefined
  let total = 0
  for (const [, amount, unit] of text.matchAll(/(\d+)(ms|s|m|h|d)/g)) {
    total += Number(amount) * (UNIT_MS[unit as string] as number)
  }
  return Number.isSafeInteger(total) ? total : undefined
}

/** Sends one control request; the sandbox's refusal (or no answer) is a CommandFailed. */
async function control(ctx: Context, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const base = stringValue(ctx, 'base-url', 'PAYHOOKS_BASE_URL') ?? DEFAULT_BASE_URL
  let url: URL
  try {
    url = new URL(path, base)
  } catch {
    throw new UsageError('--base-url must be an absolute http(s) URL')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--base-url must be an http(s) URL')
  const token = stringValue(ctx, 'token', 'PAYHOOKS_SANDBOX_TOKEN')
  const timeoutMs = integerValue(ctx, 'timeout-ms', { min: 1, max: 2_147_483_647 }) ?? 120_000
  const headers: Record<string, string> = { accept: 'application/json' }
  if (token !== undefined) headers['x-sandbox-token'] = token
  if (body !== undefined) headers['content-type'] = 'application/json'
  let response: Response
  try {
    response = await fetch(url, {
      method,
      headers,
      signal: AbortSignal.timeout(timeoutMs),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  } catch (error) {
    if ((error as Error).name === 'TimeoutError')
      throw new CommandFailed(`${url.origin} did not answer within ${timeoutMs} ms`)
    const code = (error as { cause?: { code?: string } }).cause?.code
    throw new CommandFailed(`cannot reach the sandbox at ${url.origin}${code ? ` (${code})` : ''}`)
  }
  const text = await response.text()
  let answer: Record<string, unknown> = {}
  try {
    answer = text ? (JSON.parse(text) as Record<string, unknown>) : {}
  } catch {
    throw new CommandFailed(`${url.origin} answered ${response.status} without JSON: is it a payhooks sandbox?`)
  }
  if (!response.ok) {
    const message = (answer.error as { message?: unknown } | undefined)?.message
    const hint = response.status === 401 && token === undefined ? ' (pass --token or set PAYHOOKS_SANDBOX_TOKEN)' : ''
    throw new CommandFailed(`${response.status}: ${typeof message === 'string' ? message : 'refused'}${hint}`)
  }
  return answer
}

/** An attempt `POST /_sandbox/clock/advance` reports as run. */
interface RanAttempt {
  eventId: string
  eventType: string
  subscriptionId: string
  url?: string
  kind: string
  retry?: number
  at: string
  status?: number
  error?: string
  latencyMs: number
  response?: string
  hint?: string
}

const ANSWER_CHARS = 160

/** `  <time>  <type> <id> → <url>  retry 1: 503 in 4 ms`, the start of the answer, and what it means if known. */
function attemptLines(attempt: RanAttempt): string {
  const name = attempt.kind === 'scheduled' ? (attempt.retry ? `retry ${attempt.retry}` : 'first send') : attempt.kind
  const result = attempt.status === undefined ? (attempt.error ?? 'no answer') : String(attempt.status)
  const lines = [
    `  ${attempt.at}  ${attempt.eventType} ${attempt.eventId} → ${attempt.url ?? attempt.subscriptionId}  ${name}: ${result} in ${attempt.latencyMs} ms`,
  ]
  return [...lines, ...answerLines(attempt)].join('\n')
}

/** The start of an attempt's answer on one line, and what it means if known, indented under the attempt. */
function answerLines(attempt: { response?: string; hint?: string }): string[] {
  const lines: string[] = []
  const body = attempt.response?.replace(/\s+/g, ' ').trim()
  if (body) lines.push(`      ${body.length > ANSWER_CHARS ? `${body.slice(0, ANSWER_CHARS)}…` : body}`)
  if (attempt.hint) lines.push(`      means: ${attempt.hint}`)
  return lines
}

const advance: CommandSpec = {
  name: ['sandbox', 'advance'],
  usage: '<duration> [--base-url <url>] [--token <token>]',
  summary: 'Move the clock of a sandbox started with --manual-clock',
  details: [
    'Runs every send due up to then, in time order, and returns once they completed: the hourly',
    'retries of the service play out in seconds. Prints each attempt that ran with its answer (and what',
    'a 401, future_event, stale_event or parked answer means). Durations: 1h, 30m, 1h30m, 45s, 500ms, 3d.',
  ],
  examples: ['payhooks sandbox advance 1h', 'payhooks sandbox advance 72h --base-url http://127.0.0.1:4010 --json'],
  options: controlOptions,
  positionals: { min: 1, max: 1, name: '<duration>' },
  async run(ctx) {
    const text = ctx.positionals[0] as string
    const ms = parseDuration(text)
    if (ms === undefined) throw new UsageError(`"${text}" is not a duration such as 1h, 30m, 1h30m, 45s or 500ms`)
    let answer: Record<string, unknown>
    try {
      answer = await control(ctx, 'POST', '/_sandbox/clock/advance', { ms })
    } catch (error) {
      if (error instanceof CommandFailed && error.message.startsWith('409:')) {
        throw new CommandFailed(
          '409: the sandbox runs on a real clock, which only time moves: restart it with `payhooks sandbox --manual-clock` to play the hourly retries with `payhooks sandbox advance`',
        )
      }
      throw error
    }
    const { now, attempts = [] } = (answer.data ?? {}) as { now?: unknown; attempts?: RanAttempt[] }
    if (ctx.json) {
      printJson(ctx, { advancedMs: ms, now, attempts })
      return 0
    }
    out(ctx, `Clock advanced ${text}: now ${String(now)}`)
    out(ctx, attempts.length === 0 ? 'No attempt was due.' : `${attempts.length} attempt(s) ran:`)
    for (const attempt of attempts) out(ctx, attemptLines(attempt))
    return 0
  },
}

interface EmitAnswer {
  data: EmitEntry
  deliveries: number
  warning?: string
}

interface EmitEntry {
  eventId: string
  eventType: string
  merchantId: number
  deliveries: {
    subscriptionId: string
    state: string
    nextAttemptTime?: number
    attempts: { status?: number; error?: string; latencyMs: number; response?: string; hint?: string }[]
  }[]
}

/** The service's limit for an answer (spec 6.1), and a margin for the sandbox to record it. */
const ANSWER_WAIT_MS = 10_000 + 1_000
const POLL_MS = 100

/**
 * The entry once every delivery's first send was answered. Chaos holds some first sends back (up to `maxDelayMs`, 2 s
 * by default): on a real clock this waits for them, at most their delay plus the service's 10 seconds; on a manual
 * clock, which only `advance` moves, it returns at once with the clock's time (`manualNow`).
 */
async function firstAnswers(ctx: Context, entry: EmitEntry): Promise<{ entry: EmitEntry; manualNow?: number }> {
  const unsent = (e: EmitEntry) => e.deliveries.filter((d) => d.attempts.length === 0 && d.state === 'pending')
  if (unsent(entry).length === 0) return { entry }
  const clock = (await control(ctx, 'GET', '/_sandbox/clock')).data as { time: number; manual: boolean }
  if (clock.manual) return { entry, manualNow: clock.time }
  const due = Math.max(...unsent(entry).map((d) => d.nextAttemptTime ?? clock.time))
  const until = Date.now() + Math.max(0, due - clock.time) + ANSWER_WAIT_MS
  let current = entry
  while (unsent(current).length > 0 && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, POLL_MS))
    const path = `/_sandbox/log/${encodeURIComponent(entry.eventId)}`
    current = (await control(ctx, 'GET', path)).data as EmitEntry
  }
  return { entry: current }
}

/** Why a delivery shows no answer yet, and when its first send goes out (`manualNow`: a manual clock's time). */
function notSentLine(delivery: EmitEntry['deliveries'][number], manualNow: number | undefined): string {
  if (manualNow !== undefined) {
    const inMs = delivery.nextAttemptTime === undefined ? undefined : delivery.nextAttemptTime - manualNow
    return inMs === undefined
      ? 'not sent yet: run payhooks sandbox advance to send it'
      : `not sent yet: chaos holds the first send ${inMs} ms; run payhooks sandbox advance ${Math.max(1, inMs)}ms to send it`
  }
  return delivery.nextAttemptTime === undefined
    ? 'no answer yet'
    : `no answer within ${ANSWER_WAIT_MS / 1000} s of its send at ${new Date(delivery.nextAttemptTime).toISOString()}: see payhooks sandbox's dashboard`
}

const emit: CommandSpec = {
  name: ['sandbox', 'emit'],
  usage:
    '<event-type> [--merchant <id>] [--data <json>] [--event-id <id>] [--created-at <time> | --age <duration>] [--base-url <url>]',
  summary: 'Make a running sandbox emit an event to its subscriptions',
  details: [
    'The sample message of the type, with --data merged over its data. Prints where it went; an',
    'event that no subscription gets is still logged, and a warning says why. A type the spec does not',
    `name is refused with a suggestion unless --${ALLOW_UNKNOWN} is given. --age 75h (or --created-at) stamps`,
    'created_at in the past, to rehearse the outage recovery (stale_event, parked, replay) without faking a clock.',
    'Waits for the first answer of each subscription: chaos may hold a first send back up to 2 s, and a receiver',
    'has 10 s to answer. On a manual clock a held-back send waits for advance: the line says by how much.',
  ],
  examples: [
    'payhooks sandbox emit transaction_settled',
    'payhooks sandbox emit transaction_settled --merchant 5678 --data \'{"settlement_amount": 12.5}\' --json',
    'payhooks sandbox emit transaction_settled --age 75h   # older than a receiver accepts: stale_event or parked',
  ],
  options: {
    merchant: { type: 'string', arg: '<id>', help: "merchant of the event (default the sandbox's first)" },
    data: { type: 'string', arg: '<json>', help: "JSON object merged over the sample's data" },
    'event-id': { type: 'string', arg: '<id>', help: 'event_id to use (default a fresh evt_<uuid>)' },
    'created-at': { type: 'string', arg: '<time>', help: 'created_at of the event, ISO 8601 UTC (default now)' },
    age: { type: 'string', arg: '<duration>', help: 'created_at this long before now: 75h, 3d, 1h30m' },
    [ALLOW_UNKNOWN]: allowUnknownOption,
    ...controlOptions,
  },
  positionals: { min: 1, max: 1, name: '<event-type>' },
  async run(ctx) {
    checkEventTypes(ctx, [ctx.positionals[0] as string])
    const merchantId = integerValue(ctx, 'merchant', { min: 0, max: Number.MAX_SAFE_INTEGER })
    const dataText = stringValue(ctx, 'data')
    let data: unknown
    if (dataText !== undefined) {
      try {
        data = JSON.parse(dataText)
      } catch {
        throw new UsageError('--data must be a JSON object')
      }
      if (typeof data !== 'object' || data === null || Array.isArray(data)) {
        throw new UsageError('--data must be a JSON object')
      }
    }
    const eventId = stringValue(ctx, 'event-id')
    const createdAt = createdAtValue(ctx)
    const answer = (await control(ctx, 'POST', '/_sandbox/emit', {
      event_type: ctx.positionals[0],
      ...(merchantId === undefined ? {} : { merchant_id: merchantId }),
      ...(data === undefined ? {} : { data }),
      ...(eventId === undefined ? {} : { event_id: eventId }),
      ...(createdAt === undefined ? {} : { created_at: createdAt }),
    })) as unknown as EmitAnswer
    if (answer.warning) warn(ctx, `warning: ${answer.warning}`)
    const { entry, manualNow } = await firstAnswers(ctx, answer.data)
    if (ctx.json) {
      printJson(ctx, { ...answer, data: entry })
      return 0
    }
    out(
      ctx,
      `Emitted ${entry.eventType} ${entry.eventId} (merchant ${entry.merchantId}${createdAt ? `, created_at ${createdAt}` : ''}) to ${answer.deliveries} subscription(s)`,
    )
    for (const delivery of entry.deliveries) {
      const last = delivery.attempts.at(-1)
      const result = last ? `${last.status ?? last.error} in ${last.latencyMs} ms` : notSentLine(delivery, manualNow)
      out(ctx, `  ${delivery.subscriptionId}  ${delivery.state}  ${result}`)
      for (const line of last ? answerLines(last) : []) out(ctx, line)
    }
    return 0
  },
}

/** `--created-at` as given, or `--age` before now (the wall clock, which receivers age events by); not both. */
function createdAtValue(ctx: Context): string | undefined {
  const createdAt = stringValue(ctx, 'created-at')
  const age = stringValue(ctx, 'age')
  if (createdAt !== undefined && age !== undefined) throw new UsageError('give --created-at or --age, not both')
  if (age === undefined) return createdAt
  const ms = parseDuration(age)
  if (ms === undefined) throw new UsageError(`--age "${age}" is not a duration such as 75h, 3d or 1h30m`)
  return new Date(Date.now() - ms).toISOString()
}

export const sandboxControlCommands = [advance, emit]
