import {
  CommandFailed,
  type Context,
  integerValue,
  out,
  printJson,
  requireString,
  stringValue,
  UsageError,
} from '../context.js'
import { cleanText } from '../prove/answer-text.js'
import { prove } from '../prove/engine.js'
import { LEDGER_WAIT_MS, LedgerError } from '../prove/ledger.js'
import { cleanupLetters, PROVE_ID_PREFIX } from '../prove/letters.js'
import { renderReport } from '../prove/report.js'
import { Unreachable } from '../prove/send.js'
import type { CommandSpec } from '../spec.js'
import { MODULE_ENV } from '../user-module.js'
import { type Loaded, loadDeadLetters } from './dead-letters.js'
import { SECRET_ENV, secretOption } from './local.js'

function httpUrl(name: string, text: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new UsageError(`--${name} must be an absolute http(s) URL, as in http://127.0.0.1:3000/webhooks`)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--${name} must be an http(s) URL`)
  if (url.username || url.password) throw new UsageError(`--${name} must not carry credentials`)
  return url.href
}

export const proveCommand: CommandSpec = {
  name: ['prove'],
  usage: '--url <url> --secret <secret> [--ledger <url>] [options]',
  summary: "Check a running receiver against the service's contract, as the service sees it",
  details: [
    'Sends a fixed series of about 20 deliveries, one at a time at least 50 ms apart (two at once for',
    'one check), to --url only, and prints each check PASS, WARN or FAIL with the answer it got and why',
    'it matters: no signature, a wrong secret, a body changed after signing, a valid event of each',
    'built-in type, the same event twice in a row and twice at once, a copy with other bytes under the',
    'same id, an event created 80 h ago (a manual resend), an unknown type, malformed JSON, a 2 MiB',
    'body, a GET, and every answer against the 10-second limit (each request given up on after 10.5 s).',
    'Event ids are evt_prove_<run>_<n>. With --ledger, a GET there must return how many times the',
    'handlers ran per event id ({"evt_prove_…_4": 1}): each acknowledged event must have run exactly once.',
    'A receiver with a durable dead-letter store parks the 80-hour-old event: a signed letter that a',
    'replay of all would run as a real settlement. With --module (your module exporting the receiver or its',
    'dead letters, as for dead-letters list), the run deletes the letters it caused at its end; --cleanup',
    'deletes those of every earlier run (evt_prove_*) and sends nothing. The report says what was left.',
    'Exits 0 when no check fails, 1 when one does, 2 on bad usage, when the URL (or ledger) cannot be',
    'reached, or when prove itself could not finish. See docs/guide/prove.md.',
  ],
  examples: [
    'payhooks prove --url http://127.0.0.1:3000/webhooks --secret whsec_demo',
    'PAYHOOKS_WEBHOOK_SECRET=… payhooks prove --url https://staging.example.com/webhooks \\\n    --ledger https://staging.example.com/prove-ledger --json',
    'payhooks prove --url http://127.0.0.1:3000/webhooks --module ./dist/webhooks.js',
    'payhooks prove --cleanup --module ./dist/webhooks.js',
  ],
  options: {
    url: { type: 'string', arg: '<url>', help: 'the receiver to check (required); nothing is sent elsewhere' },
    secret: secretOption,
    ledger: {
      type: 'string',
      arg: '<url>',
      help: 'GET returning {"<event_id>": <times handlers ran>}: checks each event was handled exactly once',
    },
    'ledger-wait-ms': {
      type: 'string',
      arg: '<ms>',
      help: `with --ledger: how long to wait for acknowledged events to show a run (default ${LEDGER_WAIT_MS})`,
    },
    module: {
      type: 'string',
      arg: '<file>',
      env: MODULE_ENV,
      help: "your module exporting the receiver (or its dead letters): the run's letters are deleted at its end",
    },
    cleanup: {
      type: 'boolean',
      help: `with --module: delete the letters of every earlier run (${PROVE_ID_PREFIX}*), sending nothing`,
    },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    try {
      return await runProve(ctx)
    } catch (error) {
      if (error instanceof UsageError || error instanceof CommandFailed) throw error
      if (error instanceof CannotRun) {
        ctx.io.stderr.write(`payhooks prove: ${error.message}\n`)
        return 2
      }
      // prove itself failed (not the receiver): exit 2, as "prove could not run", never 1 ("a check failed").
      const message = error instanceof Error ? error.message : String(error)
      ctx.io.stderr.write(
        `payhooks prove: could not finish: ${cleanText(message.split('\n')[0] ?? '').slice(0, 300)}\n`,
      )
      return 2
    }
  },
}

/** Prove cannot start: exit 2, as for an unreachable URL. */
class CannotRun extends Error {}

/** The module's dead letters (`--module`), or undefined without one; a module keeping them in memory is refused. */
async function moduleLetters(ctx: Context): Promise<Loaded | undefined> {
  if (stringValue(ctx, 'module', MODULE_ENV) === undefined) return undefined
  const loaded = await loadDeadLetters(ctx).catch((error: unknown) => {
    throw error instanceof CommandFailed ? new CannotRun(error.message) : error
  })
  if (loaded.deadLetters.durable === false) {
    await loaded.close().catch(() => {})
    throw new UsageError(
      "--module keeps its dead letters in memory (memoryDeadLetterStore): this process cannot see the receiver's letters",
    )
  }
  return loaded
}

async function cleanup(ctx: Context): Promise<number> {
  for (const name of ['url', 'ledger', 'ledger-wait-ms']) {
    if (ctx.values[name] !== undefined) throw new UsageError(`--cleanup sends nothing: drop --${name}`)
  }
  const loaded = await moduleLetters(ctx)
  if (!loaded) throw new UsageError('--cleanup needs --module (or PAYHOOKS_MODULE)')
  try {
    const { deleted, left, note } = await cleanupLetters(loaded.deadLetters)
    if (ctx.json) printJson(ctx, { deleted, left, ...(note ? { note } : {}) })
    else {
      out(ctx, `Deleted ${deleted.length} dead letter(s) of prove runs (${PROVE_ID_PREFIX}*).`)
      if (left.length > 0) out(ctx, `Left ${left.length}: ${left.join(', ')}${note ? ` (${note})` : ''}`)
    }
    return left.length === 0 ? 0 : 1
  } finally {
    await loaded.close().catch(() => {})
  }
}

async function runProve(ctx: Context): Promise<number> {
  if (ctx.values.cleanup === true) return cleanup(ctx)
  const url = httpUrl('url', requireString(ctx, 'url'))
  const secret = requireString(ctx, 'secret', SECRET_ENV)
  const ledgerText = stringValue(ctx, 'ledger')
  const ledgerUrl = ledgerText === undefined ? undefined : httpUrl('ledger', ledgerText)
  const ledgerWaitMs = integerValue(ctx, 'ledger-wait-ms', { min: 0, max: 600_000 })
  if (ledgerWaitMs !== undefined && !ledgerUrl) throw new UsageError('--ledger-wait-ms needs --ledger')
  // Loaded before anything is sent: a module that cannot be loaded stops the run (exit 2), as a wrong URL does.
  const loaded = await moduleLetters(ctx)
  let report: Awaited<ReturnType<typeof prove>>
  try {
    report = await prove({
      url,
      secret,
      ...(ledgerUrl ? { ledgerUrl } : {}),
      ...(ledgerWaitMs !== undefined ? { ledgerWaitMs } : {}),
      ...(loaded ? { deadLetters: loaded.deadLetters } : {}),
    })
  } catch (error) {
    if (error instanceof Unreachable) {
      ctx.io.stderr.write(`payhooks prove: ${error.message}\n`)
      return 2
    }
    if (error instanceof LedgerError) throw new CommandFailed(error.message)
    throw error
  } finally {
    await loaded?.close().catch(() => {})
  }
  if (ctx.json) printJson(ctx, report)
  else out(ctx, renderReport(report))
  return report.summary.fail > 0 || (report.onceOnly.checked && !report.onceOnly.passed) ? 1 : 0
}
