// `payhooks sandbox emit`: the warning when no subscription gets the event, and --age / --created-at against a
// real receiver; run as child processes of the built CLI on 127.0.0.1.
import { createWebhooks, memoryStore } from '@payhooks/core'
import { describe, expect, it } from 'vitest'
import { exited, runCli } from '../fixtures/cli-run.js'
import { HOUR, startSandbox, useReceiver } from '../fixtures/sandbox-cli.js'
import { call, serveLater, webhooksListener } from '../fixtures/sandbox-receivers.js'

useReceiver()

describe('payhooks sandbox emit', () => {
  it('warns when no subscription gets the event, and still logs it', async () => {
    const { child, started } = await startSandbox([])
    try {
      const env = { PAYHOOKS_BASE_URL: started.url }
      const text = await runCli(['sandbox', 'emit', 'transaction_settled', '--merchant', '9999'], { env })
      expect(text.code).toBe(0)
      expect(text.stdout).toMatch(/^Emitted transaction_settled evt_\S+ \(merchant 9999\) to 0 subscription\(s\)\n$/)
      expect(text.stderr).toMatch(
        /^payhooks sandbox emit: warning: merchant 9999 is no merchant of the sandbox's accounts/,
      )

      const json = await runCli(
        ['sandbox', 'emit', 'payment_created', '--data', '{"payment_id":"pay_1"}', '--event-id', 'evt_cli_1', '--json'],
        { env },
      )
      expect(json.code).toBe(0)
      const answer = JSON.parse(json.stdout)
      expect(answer).toMatchObject({ deliveries: 0, warning: expect.stringMatching(/no active subscription/) })
      expect(answer.data).toMatchObject({ eventId: 'evt_cli_1', event: { data: { payment_id: 'pay_1' } } })
      expect((await call(started.url, 'GET', '/_sandbox/log')).json.total_item_count).toBe(2)
    } finally {
      child.kill('SIGTERM')
      await exited(child)
    }
  })
})

describe('payhooks sandbox emit --age and --created-at', () => {
  it('stamps created_at in the past, so a real receiver answers stale_event, and prints that answer and its meaning', async () => {
    const { child, started } = await startSandbox([])
    const target = await serveLater()
    try {
      const created = await call(started.url, 'POST', '/ps/webhook/subscription', {
        auth: `reseller ${started.credentials.resellers[0]?.key}`,
        body: { url: target.url, event_types: ['transaction_settled'], is_active: true },
      })
      expect(created.status).toBe(200)
      const webhooks = createWebhooks({ secret: created.json.data.signature_secret as string, store: memoryStore() })
      const handled: string[] = []
      webhooks.on('transaction_settled', (event) => void handled.push(event.event_id))
      target.use(webhooksListener(webhooks))
      const env = { PAYHOOKS_BASE_URL: started.url }

      const before = Date.now()
      const old = await runCli(['sandbox', 'emit', 'transaction_settled', '--age', '75h'], { env })
      expect(old.code, old.stderr).toBe(0)
      const createdAt = /, created_at (\S+Z)\) to 1 subscription/.exec(old.stdout)?.[1] as string
      expect(Math.abs(before - 75 * HOUR - Date.parse(createdAt))).toBeLessThan(60_000)
      expect(old.stdout).toMatch(/^ {2}wsub_\S+ {2}pending {2}422 in \d+ ms$/m)
      expect(old.stdout).toMatch(/^ {6}\{"error":"stale_event","message":"event older than this receiver accepts/m)
      expect(old.stdout).toMatch(/^ {6}means: stale_event: the event's created_at is older/m)
      expect(handled).toEqual([])

      const now = await runCli(['sandbox', 'emit', 'transaction_settled', '--created-at', new Date().toISOString()], {
        env,
      })
      expect(now.stdout).toMatch(/^ {2}wsub_\S+ {2}delivered {2}200 in \d+ ms$/m)
      expect(now.stdout).toMatch(/^ {6}\{"ok":true,"event_id":"evt_\S+","status":"processed"\}$/m)
      expect(handled).toHaveLength(1)

      const log = (await call(started.url, 'GET', '/_sandbox/log')).json.data as { createdAt?: string }[]
      expect(log.map((entry) => entry.createdAt)).toContain(createdAt)

      const both = await runCli(['sandbox', 'emit', 'transaction_settled', '--age', '1h', '--created-at', createdAt], {
        env,
      })
      expect([both.code, both.stderr]).toEqual([2, expect.stringContaining('give --created-at or --age, not both')])
      const bad = await runCli(['sandbox', 'emit', 'transaction_settled', '--created-at', 'yesterday'], { env })
      expect([bad.code, bad.stderr]).toEqual([
        1,
        expect.stringContaining('400: created_at must be an ISO 8601 UTC time'),
      ])
    } finally {
      child.kill('SIGTERM')
      await exited(child)
      await target.close()
    }
  })
})
