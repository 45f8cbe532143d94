// How `payhooks sandbox` starts: --state kept across a restart, and beyond loopback the control token it prints
// and the control commands need; run as child processes of the built CLI on 127.0.0.1.
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { exited, runCli, startCli } from '../fixtures/cli-run.js'
import { receiver, startSandbox, useReceiver } from '../fixtures/sandbox-cli.js'
import { call } from '../fixtures/sandbox-receivers.js'

useReceiver()

describe('payhooks sandbox --state', () => {
  it('keeps subscriptions and their secrets across a restart', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'payhooks-cli-state-'))
    const state = join(dir, 'sandbox.json')
    try {
      const first = await startSandbox(['--state', state])
      let created: { id: string; signature_secret: string }
      try {
        expect(first.started).toMatchObject({ state, restoredSubscriptions: 0 })
        const answer = await call(first.started.url, 'POST', '/ps/webhook/subscription', {
          auth: `reseller ${first.started.credentials.resellers[0]?.key}`,
          body: { url: receiver.url, event_types: ['transaction_settled'], is_active: true },
        })
        created = answer.json.data
      } finally {
        first.child.kill('SIGTERM')
        expect(await exited(first.child)).toBe(0)
      }
      expect((await stat(state)).mode & 0o777).toBe(0o600)

      const second = await startSandbox(['--state', state])
      try {
        expect(second.started).toMatchObject({ state, restoredSubscriptions: 1 })
        const kept = await call(second.started.url, 'GET', `/ps/webhook/subscription/${created.id}`, {
          auth: `reseller ${second.started.credentials.resellers[0]?.key}`,
        })
        expect(kept.status).toBe(200)
        expect(kept.json.data.signature_secret).toBe(created.signature_secret)
      } finally {
        second.child.kill('SIGTERM')
        expect(await exited(second.child)).toBe(0)
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})

describe('payhooks sandbox beyond loopback', () => {
  it('prints a control token, and the control commands need it', async () => {
    const { child, started } = await startSandbox(['--host', '0.0.0.0', '--manual-clock'])
    try {
      expect(started.tokenRequired).toBe(true)
      expect(started.token).toMatch(/^[\x21-\x7e]{16,}$/)
      expect(started.dashboard).toBe(`${started.url}/?token=${encodeURIComponent(started.token as string)}`)
      const base = `http://127.0.0.1:${new URL(started.url).port}`

      const refused = await runCli(['sandbox', 'advance', '1h', '--base-url', base])
      expect(refused.code).toBe(1)
      expect(refused.stderr).toMatch(/401: .*sandbox token.* \(pass --token or set PAYHOOKS_SANDBOX_TOKEN\)\n$/)
      expect((await call(base, 'GET', '/_sandbox/credentials')).status).toBe(401)

      const flag = await runCli(['sandbox', 'advance', '1h', '--base-url', base, '--token', started.token as string])
      expect(flag.code).toBe(0)
      const env = await runCli(['sandbox', 'emit', 'transaction_settled', '--base-url', base], {
        env: { PAYHOOKS_SANDBOX_TOKEN: started.token as string },
      })
      expect(env.code).toBe(0)
    } finally {
      child.kill('SIGTERM')
      expect(await exited(child)).toBe(0)
    }
  })

  it('takes its token from --token or PAYHOOKS_SANDBOX_TOKEN, and prints it in text mode', async () => {
    const token = 'shared-dev-box-token-42'
    const { child, line, output } = await startCli(
      ['sandbox', '--port', '0', '--host', '0.0.0.0', '--no-chaos'],
      /^Control token: /,
      { PAYHOOKS_SANDBOX_TOKEN: token },
    )
    try {
      expect(line).toBe(`Control token: ${token} (x-sandbox-token header; PAYHOOKS_SANDBOX_TOKEN for the CLI)`)
      expect(output().stdout).toMatch(/^Dashboard: http:\/\/0\.0\.0\.0:\d+\/\?token=shared-dev-box-token-42$/m)
    } finally {
      child.kill('SIGTERM')
      await exited(child)
    }
    const short = await runCli(['sandbox', '--port', '0', '--token', 'short'])
    expect(short.code).toBe(2)
    expect(short.stderr).toMatch(/--token must be at least 16 visible ASCII characters/)
  })
})
