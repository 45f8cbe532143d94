import { createSandbox } from '@payhooks/sandbox'
import { integerValue, out, stringValue, UsageError } from '../context.js'
import type { CommandSpec } from '../spec.js'

const sandbox: CommandSpec = {
  name: ['sandbox'],
  usage: '[--port 4010] [--host 127.0.0.1] [--no-chaos]',
  summary: 'Run a local emulator of the service until Ctrl+C',
  details: [
    'Serves the subscription API with both authorization schemes and delivers signed messages with',
    'hourly retries. Chaos (duplicated and reordered deliveries, as the service may do) is on by default.',
    'Point the service commands at it with --base-url or PAYHOOKS_BASE_URL.',
  ],
  examples: [
    'payhooks sandbox',
    'payhooks sandbox --port 0 --no-chaos --json',
    "PAYHOOKS_BASE_URL=http://127.0.0.1:4010 PAYHOOKS_RESELLER_KEY='1001|sandbox-reseller-key' payhooks subscriptions list",
  ],
  options: {
    port: { type: 'string', arg: '<port>', default: '4010', help: 'port to listen on; 0 picks a free one' },
    host: { type: 'string', arg: '<host>', default: '127.0.0.1', help: 'address to listen on' },
    chaos: { type: 'boolean', default: true, help: 'duplicate and reorder deliveries (--no-chaos: off)' },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const port = integerValue(ctx, 'port', { min: 0, max: 65_535 }) as number
    const host = stringValue(ctx, 'host') as string
    if (host === '') throw new UsageError('--host must not be empty')
    const chaos = ctx.values.chaos !== false
    const log = (line: string) => (ctx.json ? ctx.io.stderr : ctx.io.stdout).write(`${line}\n`)
    const instance = createSandbox({ chaos, logger: log })
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
    // One line, so a script can read it as soon as the sandbox listens.
    if (ctx.json) out(ctx, JSON.stringify({ url, chaos: instance.chaos ?? false, credentials: instance.credentials }))
    else out(ctx, `Listening on ${url} (chaos ${chaos ? 'on' : 'off'}). Press Ctrl+C to stop.`)
    const signal = await stopped
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    log(`${signal}: stopping the sandbox`)
    await instance.close()
    return 0
  },
}

export const sandboxCommands = [sandbox]
