import { resolve } from 'node:path'
import { createSandbox } from '@payhooks/sandbox'
import { integerValue, out, stringValue, UsageError } from '../context.js'
import type { CommandSpec } from '../spec.js'
import { sandboxControlCommands } from './sandbox-control.js'

const sandbox: CommandSpec = {
  name: ['sandbox'],
  usage: '[--port 4010] [--host 127.0.0.1] [--no-chaos] [--manual-clock] [--state <file>] [--token <token>]',
  summary: 'Run a local emulator of the service until Ctrl+C',
  details: [
    'Serves the subscription API with both authorization schemes and delivers signed messages with',
    'hourly retries. Chaos (duplicated and reordered deliveries, as the service may do) is on by default.',
    'Point the service commands at it with --base-url or PAYHOOKS_BASE_URL.',
    'Its dashboard (the printed address, path /) shows subscriptions, events and every attempt, live.',
    'With --manual-clock time stands still until `payhooks sandbox advance 1h` (or the dashboard) moves it,',
    'so the hourly retries play out in minutes (chaos-delayed first sends wait for it too: add --no-chaos',
    'to see every first send at once). The manual clock moves only the retry schedule: created_at is',
    'always the wall clock, so a receiver on its defaults answers emits after any advance (no future_event).',
    'Listening beyond loopback (--host 0.0.0.0) puts the',
    'control routes and the dashboard behind a token, printed at start (x-sandbox-token header).',
    'Subscriptions and their secrets live in memory and a restart makes new ones (a receiver still',
    'holding an old secret then answers 401): --state <file> keeps them in that file across restarts.',
  ],
  examples: [
    'payhooks sandbox',
    'payhooks sandbox --port 0 --no-chaos --json',
    'payhooks sandbox --manual-clock   # then: payhooks sandbox advance 1h',
    'payhooks sandbox --state .payhooks-sandbox.json   # subscriptions and secrets survive a restart',
    "PAYHOOKS_BASE_URL=http://127.0.0.1:4010 PAYHOOKS_RESELLER_KEY='1001|sandbox-reseller-key' payhooks subscriptions list",
  ],
  options: {
    port: { type: 'string', arg: '<port>', default: '4010', help: 'port to listen on; 0 picks a free one' },
    host: { type: 'string', arg: '<host>', default: '127.0.0.1', help: 'address to listen on' },
    chaos: { type: 'boolean', default: true, help: 'duplicate and reorder deliveries (--no-chaos: off)' },
    'manual-clock': { type: 'boolean', help: 'time moves only with `payhooks sandbox advance` or the dashboard' },
    state: {
      type: 'string',
      arg: '<file>',
      help: 'keep subscriptions and their secrets in this file across restarts (mode 0600)',
    },
    token: {
      type: 'string',
      arg: '<token>',
      env: 'PAYHOOKS_SANDBOX_TOKEN',
      help: 'control token (default a random one, printed when needed)',
    },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const port = integerValue(ctx, 'port', { min: 0, max: 65_535 }) as number
    const host = stringValue(ctx, 'host') as string
    if (host === '') throw new UsageError('--host must not be empty')
    const chaos = ctx.values.chaos !== false
    const manualClock = ctx.values['manual-clock'] === true
    const controlToken = stringValue(ctx, 'token', 'PAYHOOKS_SANDBOX_TOKEN')
    const statePath = stringValue(ctx, 'state')
    if (statePath === '') throw new UsageError('--state must not be empty')
    const log = (line: string) => (ctx.json ? ctx.io.stderr : ctx.io.stdout).write(`${line}\n`)
    let instance: ReturnType<typeof createSandbox>
    try {
      instance = createSandbox({
        chaos,
        logger: log,
        ...(manualClock ? { clock: 'manual' as const } : {}),
        ...(controlToken === undefined ? {} : { controlToken }),
        ...(statePath === undefined ? {} : { statePath }),
      })
    } catch (error) {
      throw new UsageError(
        (error as Error).message
          .replace('createSandbox: controlToken', '--token')
          .replace('createSandbox: statePath', '--state')
          .replace('createSandbox: cannot', '--state: cannot'),
      )
    }
    const kept = statePath === undefined ? undefined : instance.subscriptions().length
    let url: string
    try {
      ;({ url } = await instance.listen(port, host))
    } catch (error) {
      await instance.close()
      const code = (error as { code?: string }).code
      throw new UsageError(`cannot listen on ${host}:${port}${code ? ` (${code})` : ''}`)
    }
    let onSignal: (signal: NodeJS.Signals) => void = () => {}
    const stopped = new Promise<NodeJS.Signals>((resolve) => {
      onSignal = resolve
      process.once('SIGINT', onSignal)
      process.once('SIGTERM', onSignal)
    })
    const tokenRequired = instance.controlTokenRequired
    const dashboard = `${url}/${tokenRequired ? `?token=${encodeURIComponent(instance.controlToken)}` : ''}`
    // One line, so a script can read it as soon as the sandbox listens.
    if (ctx.json) {
      out(
        ctx,
        JSON.stringify({
          url,
          dashboard,
          chaos: instance.chaos ?? false,
          manualClock,
          ...(statePath === undefined ? {} : { state: statePath, restoredSubscriptions: kept }),
          tokenRequired,
          ...(tokenRequired ? { token: instance.controlToken } : {}),
          credentials: instance.credentials,
        }),
      )
    } else {
      const clock = manualClock
        ? 'manual clock for the retry schedule, created_at on the wall clock: payhooks sandbox advance 1h'
        : 'real clock'
      out(ctx, `Listening on ${url} (chaos ${chaos ? 'on' : 'off'}, ${clock}). Press Ctrl+C to stop.`)
      out(ctx, `Dashboard: ${dashboard}`)
      if (statePath !== undefined) {
        out(
          ctx,
          `State: ${resolve(statePath)} (${kept} subscription(s) restored; it holds their secrets: keep it out of git)`,
        )
      }
      if (tokenRequired) {
        out(ctx, `Control token: ${instance.controlToken} (x-sandbox-token header; PAYHOOKS_SANDBOX_TOKEN for the CLI)`)
      }
    }
    const signal = await stopped
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    log(`${signal}: stopping the sandbox`)
    await instance.close()
    return 0
  },
}

// `sandbox advance` and `sandbox emit` first: the lookup takes the first command whose words match.
export const sandboxCommands = [...sandboxControlCommands, sandbox]
