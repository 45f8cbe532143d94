import { CommandFailed, integerValue, out, printJson, requireString, stringValue, UsageError } from '../context.js'
import { prove } from '../prove/engine.js'
import { LEDGER_WAIT_MS, LedgerError } from '../prove/ledger.js'
import { renderReport } from '../prove/report.js'
import { Unreachable } from '../prove/send.js'
import type { CommandSpec } from '../spec.js'
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
    'Exits 0 when no check fails, 1 when one does, 2 on bad usage or when the URL (or ledger) cannot be reached.',
    'See docs/guide/prove.md.',
  ],
  examples: [
    'payhooks prove --url http://127.0.0.1:3000/webhooks --secret whsec_demo',
    'PAYHOOKS_WEBHOOK_SECRET=… payhooks prove --url https://staging.example.com/webhooks \\\n    --ledger https://staging.example.com/prove-ledger --json',
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
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const url = httpUrl('url', requireString(ctx, 'url'))
    const secret = requireString(ctx, 'secret', SECRET_ENV)
    const ledgerText = stringValue(ctx, 'ledger')
    const ledgerUrl = ledgerText === undefined ? undefined : httpUrl('ledger', ledgerText)
    const ledgerWaitMs = integerValue(ctx, 'ledger-wait-ms', { min: 0, max: 600_000 })
    if (ledgerWaitMs !== undefined && !ledgerUrl) throw new UsageError('--ledger-wait-ms needs --ledger')
    let report: Awaited<ReturnType<typeof prove>>
    try {
      report = await prove({
        url,
        secret,
        ...(ledgerUrl ? { ledgerUrl } : {}),
        ...(ledgerWaitMs !== undefined ? { ledgerWaitMs } : {}),
      })
    } catch (error) {
      if (error instanceof Unreachable) {
        ctx.io.stderr.write(`payhooks prove: ${error.message}\n`)
        return 2
      }
      if (error instanceof LedgerError) throw new CommandFailed(error.message)
      throw error
    }
    if (ctx.json) printJson(ctx, report)
    else out(ctx, renderReport(report))
    return report.summary.fail > 0 ? 1 : 0
  },
}
