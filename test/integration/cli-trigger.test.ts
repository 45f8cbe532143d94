// The CLI beside receivers: trigger against a core receiver and the Express example, the sandbox until SIGTERM, and
// the set-up a newcomer finds (the committed bin launcher).
import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer } from 'node:http'
import { resolve } from 'node:path'
import { SIGNATURE_HEADER, sign } from '@payhooks/core'
import { beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../examples/express/server.js'
import { close, listen, oneLine, SECRET, startCoreReceiver } from '../fixtures/cli-helpers.js'
import { assertBuilt, exited, runCli, startCli } from '../fixtures/cli-run.js'

beforeAll(() => assertBuilt())

describe('trigger', () => {
  it('posts a signed sample event that the typed handler of a core receiver sees, and prints 200', async () => {
    const receiver = await startCoreReceiver(SECRET)
    try {
      const result = await runCli([
        'trigger',
        'transaction_settled',
        '--to',
        receiver.url,
        '--secret',
        SECRET,
        '--merchant',
        '5678',
        '--event-id',
        'evt_cli_trigger_1',
        '--data',
        '{"settlement_amount":-5}',
      ])
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/^← 200 OK in \d+ ms$/m)
      expect(result.stdout).toContain('"status":"processed"')
      expect(receiver.settled).toHaveLength(1)
      const event = receiver.settled[0]!
      expect(event.event_id).toBe('evt_cli_trigger_1')
      expect(event.merchant_id).toBe(5678)
      expect(event.data.settlement_amount).toBe(-5)
      expect(event.data.transaction_id).toMatch(/^txn_[0-9a-f]{8}$/)
    } finally {
      await receiver.close()
    }
  })

  it('--count 2 sends two events with their own transaction ids, as a table keyed on them needs', async () => {
    const receiver = await startCoreReceiver(SECRET)
    try {
      const to = ['--to', receiver.url, '--secret', SECRET]
      expect((await runCli(['trigger', 'transaction_settled', '--count', '2', ...to])).code).toBe(0)
      const rows = new Map(receiver.settled.map((event) => [event.data.transaction_id, event]))
      expect(receiver.settled).toHaveLength(2)
      expect(rows.size).toBe(2)
      expect(new Set(receiver.settled.map((event) => event.data.transaction_external_id)).size).toBe(2)
    } finally {
      await receiver.close()
    }
  })

  it('--duplicate sends the same bytes twice: the receiver runs its handler once and answers duplicate', async () => {
    const receiver = await startCoreReceiver(SECRET)
    try {
      const result = await runCli([
        'trigger',
        'merchant_activated_for_payment_type',
        '--to',
        receiver.url,
        '--secret',
        SECRET,
        '--count',
        '2',
        '--duplicate',
        '--json',
      ])
      expect(result.code).toBe(0)
      const { deliveries } = JSON.parse(result.stdout) as {
        deliveries: { event_id: string; status: number; duplicate: boolean; body: string }[]
      }
      expect(deliveries.map((d) => [d.status, d.duplicate, JSON.parse(d.body).status])).toEqual([
        [200, false, 'processed'],
        [200, true, 'duplicate'],
        [200, false, 'processed'],
        [200, true, 'duplicate'],
      ])
      expect(deliveries[0]!.event_id).toBe(deliveries[1]!.event_id)
      expect(deliveries[0]!.event_id).not.toBe(deliveries[2]!.event_id)
      expect(receiver.activated.map((e) => e.event_id)).toEqual([deliveries[0]!.event_id, deliveries[2]!.event_id])
    } finally {
      await receiver.close()
    }
  })

  it('exits 1 and prints the answer when the receiver rejects the signature', async () => {
    const receiver = await startCoreReceiver(SECRET)
    try {
      const result = await runCli(['trigger', 'transaction_settled', '--to', receiver.url, '--secret', 'whsec_wrong'])
      expect(result.code).toBe(1)
      expect(result.stdout).toMatch(/^← 401 Unauthorized/m)
      expect(result.stdout).toContain('invalid_signature')
      expect(receiver.settled).toHaveLength(0)
    } finally {
      await receiver.close()
    }
  })

  it.each([
    [['trigger', 'transaction_setled', '--to', 'http://127.0.0.1:9/webhooks', '--secret', SECRET], /could not reach/],
    [['sandbox', 'emit', 'transaction_setled', '--base-url', 'http://127.0.0.1:9'], /cannot reach the sandbox/],
  ])(
    '%j refuses a misspelt event type with the hint subscriptions create gives, unless allowed',
    async (args, tried) => {
      const refused = await runCli(args)
      expect(refused.code).toBe(2)
      expect(oneLine(refused.stderr)).toMatch(
        /event type "transaction_setled" is not one the spec names \(did you mean transaction_settled\?\): it names .*; pass --allow-unknown-event-type to send it anyway;/,
      )
      const allowed = await runCli([...args, '--allow-unknown-event-type'])
      expect(allowed.code).toBe(1)
      expect(allowed.stderr).toMatch(tried)
    },
  )

  it('exits 1 with one line when the receiver cannot be reached', async () => {
    const receiver = await startCoreReceiver(SECRET)
    await receiver.close()
    const result = await runCli(['trigger', 'transaction_settled', '--to', receiver.url, '--secret', SECRET])
    expect(result.code).toBe(1)
    expect(oneLine(result.stderr)).toMatch(/^payhooks trigger: could not reach .*ECONNREFUSED/)
  })

  it('reaches the Express example app, whose typed handler logs the event', async () => {
    const logged: string[] = []
    const app = createApp({ secret: SECRET, log: (line: string) => logged.push(line) })
    const server = createServer(app)
    const url = `${await listen(server)}/webhooks`
    try {
      const result = await runCli([
        'trigger',
        'transaction_returned',
        '--to',
        url,
        '--secret',
        SECRET,
        '--event-id',
        'evt_cli_x',
      ])
      expect(result.code).toBe(0)
      expect(result.stdout).toMatch(/^← 200 OK/m)
      expect(logged).toEqual([expect.stringMatching(/^transaction_returned evt_cli_x: txn_[0-9a-f]{8} returned R01/)])
    } finally {
      await close(server)
    }
  })
})

describe('sandbox', () => {
  it('serves the API until SIGTERM: the CLI creates a subscription on it and its test message reaches a receiver', async () => {
    let secret = 'whsec_not_yet_known'
    const receiver = await startCoreReceiver(() => secret)
    const { child, line } = await startCli(['sandbox', '--port', '0', '--no-chaos', '--json'], /^\{/)
    try {
      const started = JSON.parse(line) as { url: string; chaos: unknown; credentials: { resellers: { key: string }[] } }
      expect(started.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(started.chaos).toBe(false)
      const env = {
        PAYHOOKS_BASE_URL: started.url,
        PAYHOOKS_RESELLER_KEY: started.credentials.resellers[0]!.key,
      }
      const created = await runCli(
        [
          'subscriptions',
          'create',
          '--all-merchants',
          '--url',
          receiver.url,
          '--event-type',
          'merchant_activated_for_payment_type',
          '--json',
        ],
        { env },
      )
      expect(created.code).toBe(0)
      const { id, signature_secret } = JSON.parse(created.stdout) as { id: string; signature_secret: string }
      secret = signature_secret

      const listed = await runCli(['subscriptions', 'list', '--json'], { env })
      expect(JSON.parse(listed.stdout).data.map((s: { id: string }) => s.id)).toContain(id)

      const type = 'merchant_activated_for_payment_type'
      const test = await runCli(['test-event', '--url', receiver.url, '--event-type', type, '--json'], { env })
      expect([test.code, JSON.parse(test.stdout)]).toEqual([
        0,
        { status_code: 200, signed_with: 'subscription', subscription_id: id },
      ])
      expect(receiver.activated).toHaveLength(1)

      // A second test is a new event (fresh event_id): the handler runs again, no silent duplicate.
      const again = await runCli(['test-event', '--url', receiver.url, '--event-type', type], { env })
      expect(again.code).toBe(0)
      expect(again.stdout).toContain(`Signed with the signature_secret of subscription ${id}`)
      expect(receiver.activated).toHaveLength(2)
      expect(receiver.activated[1]!.event_id).not.toBe(receiver.activated[0]!.event_id)

      // No subscription has this url: the sandbox signs with its test secret, which the receiver refuses.
      const other = `${receiver.url}?unsubscribed`
      const refused = await runCli(['test-event', '--url', other, '--event-type', type], { env })
      expect(refused.code).toBe(1)
      expect(refused.stdout).toContain('The target answered 401')
      expect(refused.stdout).toContain('Signed with the test secret ("sandbox-test-secret"')
      expect(oneLine(refused.stderr)).toContain(`subscribe ${other} first`)
      expect(receiver.activated).toHaveLength(2)
    } finally {
      child.kill('SIGTERM')
      expect(await exited(child)).toBe(0)
      await receiver.close()
    }
  })
})

describe('set-up as a newcomer finds it', () => {
  const root = resolve(import.meta.dirname, '../..')

  /** Runs a command from the repository root with a plain environment, and collects its output. */
  function runIn(command: string, args: string[], env: Record<string, string> = {}, input = '') {
    return new Promise<{ code: number | null; stdout: string; stderr: string }>((done, reject) => {
      const child = spawn(command, args, {
        cwd: root,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? root,
          npm_config_update_notifier: 'false',
          ...env,
        },
      })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString('utf8')
      })
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString('utf8')
      })
      child.on('error', reject)
      child.on('close', (code) => done({ code, stdout, stderr }))
      child.stdin.end(input)
    })
  }

  it('the committed bin launcher runs the built CLI, and `pnpm payhooks` prints nothing but its output', async () => {
    const { version } = JSON.parse(await readFile(resolve(root, 'packages/cli/package.json'), 'utf8')) as {
      version: string
    }
    const launcher = await runIn(process.execPath, ['packages/cli/bin.js', '--version'])
    expect([launcher.code, launcher.stdout]).toEqual([0, `${version}\n`])

    // No "> payhooks-monorepo@ payhooks" banner: --json output stays parseable and --secret is not echoed.
    const body = '{"event_id":"evt_1"}'
    const signed = await runIn('pnpm', ['payhooks', 'sign', '--secret', 'whsec_banner_check', '--json'], {}, body)
    expect(signed.code).toBe(0)
    expect(JSON.parse(signed.stdout)).toEqual({
      header: SIGNATURE_HEADER,
      signature: await sign('whsec_banner_check', body),
    })
    expect(signed.stdout + signed.stderr).not.toContain('whsec_banner_check')

    const exec = await runIn('pnpm', ['exec', 'payhooks', '--version'])
    expect([exec.code, exec.stdout]).toEqual([0, `${version}\n`])
  })

  it.each(['express', 'koa', 'hono'])('the %s example says at start which secret it verifies with', async (name) => {
    const probe = createServer()
    const port = Number(new URL(await listen(probe)).port)
    await close(probe)
    const started = async (env: Record<string, string>) => {
      const child = spawn(process.execPath, [`examples/${name}/server.js`], {
        cwd: root,
        env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', ...env },
      })
      let stdout = ''
      try {
        await new Promise<void>((ready, reject) => {
          child.stdout.on('data', (chunk: Buffer) => {
            stdout += chunk.toString('utf8')
            if (/signatures with/.test(stdout)) ready()
          })
          child.on('exit', (code) => reject(new Error(`${name} example exited with ${code}: ${stdout}`)))
        })
      } finally {
        child.kill('SIGTERM')
        await exited(child)
      }
      return stdout
    }
    const demo = await started({})
    expect(demo).toContain(`listening on http://127.0.0.1:${port}/webhooks`)
    expect(demo).toContain('WEBHOOK_SECRET is not set: verifying signatures with the demo secret whsec_demo')
    const configured = await started({ WEBHOOK_SECRET: 'whsec_from_subscription' })
    expect(configured).toContain('verifying signatures with WEBHOOK_SECRET')
    expect(configured).not.toContain('whsec_from_subscription')
  })
})
