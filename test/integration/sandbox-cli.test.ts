// `payhooks sandbox --manual-clock`, `payhooks sandbox advance` and `payhooks sandbox emit`, run as
// child processes of the built CLI against a real sandbox and a real receiver on 127.0.0.1.
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createManualClock, createSandbox } from '@payhooks/sandbox'
import { describe, expect, it } from 'vitest'
import { exited, runCli } from '../fixtures/cli-run.js'
import { HOUR, receiver, startSandbox, useReceiver } from '../fixtures/sandbox-cli.js'
import { call, REFUSING_PORT, startReceiver } from '../fixtures/sandbox-receivers.js'

useReceiver()

describe('payhooks sandbox --manual-clock and sandbox advance', () => {
  it('holds the retry until advance moves the clock one hour', async () => {
    const { child, started } = await startSandbox(['--manual-clock'])
    try {
      expect(started).toMatchObject({ manualClock: true, tokenRequired: false, dashboard: `${started.url}/` })
      expect(started.token).toBeUndefined()
      const created = await call(started.url, 'POST', '/ps/webhook/subscription', {
        auth: `reseller ${started.credentials.resellers[0]?.key}`,
        body: { url: receiver.url, event_types: ['transaction_settled'], is_active: true },
      })
      expect(created.status).toBe(200)
      const env = { PAYHOOKS_BASE_URL: started.url }

      const emitted = await runCli(['sandbox', 'emit', 'transaction_settled', '--merchant', '1234'], { env })
      expect(emitted.code).toBe(0)
      expect(emitted.stdout).toMatch(
        /^Emitted transaction_settled (evt_\S+) \(merchant 1234\) to 1 subscription\(s\)$/m,
      )
      expect(emitted.stdout).toMatch(/^ {2}wsub_\S+ {2}pending {2}503 in \d+ ms$/m)
      const eventId = /(evt_\S+)/.exec(emitted.stdout)?.[1] as string
      const before = await call(started.url, 'GET', `/_sandbox/log/${eventId}`)
      const delivery = before.json.data.deliveries[0]
      expect(delivery.attempts).toHaveLength(1)
      expect(delivery.nextAttemptTime).toBe(delivery.firstAttemptTime + HOUR)

      // 59 minutes: nothing is due yet.
      const early = await runCli(['sandbox', 'advance', '59m', '--json'], { env })
      expect(early.code).toBe(0)
      expect(JSON.parse(early.stdout)).toEqual({
        advancedMs: 59 * 60_000,
        now: new Date(delivery.firstAttemptTime + 59 * 60_000).toISOString(),
        attempts: [],
      })
      expect(
        (await call(started.url, 'GET', `/_sandbox/log/${eventId}`)).json.data.deliveries[0].attempts,
      ).toHaveLength(1)

      const onTime = await runCli(['sandbox', 'advance', '1m', '--base-url', started.url], { env: {} })
      expect(onTime.code).toBe(0)
      const retryAt = new Date(delivery.firstAttemptTime + HOUR).toISOString()
      expect(onTime.stdout).toMatch(
        new RegExp(
          `^Clock advanced 1m: now ${retryAt}\\n1 attempt\\(s\\) ran:\\n  ${retryAt}  transaction_settled ${eventId} → ${receiver.url}  retry 1: 200 in \\d+ ms\\n`,
        ),
      )
      const after = (await call(started.url, 'GET', `/_sandbox/log/${eventId}`)).json.data.deliveries[0]
      expect(after.state).toBe('delivered')
      expect(after.attempts.map((a: { retry: number; status: number }) => [a.retry, a.status])).toEqual([
        [0, 503],
        [1, 200],
      ])
      expect(receiver.requests.filter((r) => r.json?.event_id === eventId)).toHaveLength(2)
    } finally {
      child.kill('SIGTERM')
      expect(await exited(child)).toBe(0)
    }
  })

  it('emit under chaos waits for the held-back first send and prints its answer; on a manual clock says when', async () => {
    // Every first send held back 400 to 800 ms, as the default chaos does to 30% of them (up to 2 s).
    const chaos = { reorderRate: 1, duplicateRate: 0, maxDelayMs: 800 }
    const real = createSandbox({ chaos })
    const manual = createSandbox({ chaos, clock: createManualClock({ start: Date.now() }) })
    try {
      const [realUrl, manualUrl] = await Promise.all([real.listen(), manual.listen()])
      for (const sandbox of [real, manual])
        sandbox.subscribe({ url: receiver.url, eventTypes: ['transaction_settled'] })
      const emitted = await runCli(['sandbox', 'emit', 'transaction_settled'], {
        env: { PAYHOOKS_BASE_URL: realUrl?.url ?? '' },
      })
      expect(emitted.code).toBe(0)
      expect(emitted.stdout).toMatch(/^ {2}wsub_\S+ {2}pending {2}503 in \d+ ms$/m)
      expect(emitted.stdout).not.toContain('not sent yet')
      const held = await runCli(['sandbox', 'emit', 'transaction_settled'], {
        env: { PAYHOOKS_BASE_URL: manualUrl?.url ?? '' },
      })
      expect(held.stdout).toMatch(
        /^ {2}wsub_\S+ {2}pending {2}not sent yet: chaos holds the first send \d+ ms; run payhooks sandbox advance \d+ms to send it$/m,
      )
    } finally {
      await real.close()
      await manual.close()
    }
  })

  it('prints each attempt an advance ran with its answer, and what a 401 or future_event means', async () => {
    const refusing = await startReceiver((request) =>
      request.json?.event_type === 'transaction_settled'
        ? { status: 401, body: '{"error":"invalid_signature","message":"service-hmac-sha256 does not match the body"}' }
        : {
            status: 503,
            body: `{"error":"future_event","message":"created_at is ahead of this receiver's clock; retry later"}`,
          },
    )
    const { child, started } = await startSandbox(['--manual-clock'])
    try {
      const created = await call(started.url, 'POST', '/ps/webhook/subscription', {
        auth: `reseller ${started.credentials.resellers[0]?.key}`,
        body: { url: refusing.url, event_types: ['transaction_settled', 'payment_created'], is_active: true },
      })
      expect(created.status).toBe(200)
      const env = { PAYHOOKS_BASE_URL: started.url }
      const emitted = await runCli(['sandbox', 'emit', 'transaction_settled'], { env })
      expect(emitted.stdout).toMatch(
        /^ {2}wsub_\S+ {2}pending {2}401 in \d+ ms\n {6}\{"error":"invalid_signature",.*\n {6}means: 401: the receiver refused the signature/m,
      )
      await runCli(['sandbox', 'emit', 'payment_created'], { env })

      const advanced = await runCli(['sandbox', 'advance', '1h'], { env })
      expect(advanced.code).toBe(0)
      const lines = advanced.stdout.split('\n')
      expect(lines[1]).toBe('2 attempt(s) ran:')
      expect(lines.slice(2, 5)).toEqual([
        expect.stringMatching(
          /^ {2}\S+Z {2}transaction_settled evt_\S+ → http:\/\/127\.0\.0\.1:\d+\/webhooks {2}retry 1: 401 in \d+ ms$/,
        ),
        `      {"error":"invalid_signature","message":"service-hmac-sha256 does not match the body"}`,
        expect.stringMatching(
          /^ {6}means: 401: the receiver refused the signature: it must verify with this subscription's signature_secret/,
        ),
      ])
      expect(lines.slice(5, 8)).toEqual([
        expect.stringMatching(/^ {2}\S+Z {2}payment_created evt_\S+ → \S+ {2}retry 1: 503 in \d+ ms$/),
        expect.stringContaining('"error":"future_event"'),
        expect.stringMatching(/^ {6}means: future_event: the event's created_at is ahead of the receiver's clock/),
      ])
      const json = JSON.parse((await runCli(['sandbox', 'advance', '1h', '--json'], { env })).stdout)
      expect(
        json.attempts.map((a: { retry: number; status: number; hint: string }) => [
          a.retry,
          a.status,
          a.hint.split(':')[0],
        ]),
      ).toEqual([
        [2, 401, '401'],
        [2, 503, 'future_event'],
      ])
    } finally {
      child.kill('SIGTERM')
      await exited(child)
      await refusing.close()
    }
  })

  it('serves the dashboard from the built package: a page and modules that parse, every import found', async () => {
    const { child, started } = await startSandbox([])
    const dir = await mkdtemp(join(tmpdir(), 'payhooks-dashboard-'))
    try {
      const page = await call(started.url, 'GET', '/')
      expect(page.status).toBe(200)
      expect(page.text).toContain('<script type="module" src="/_sandbox/ui/app.js"></script>')
      const importMap = JSON.parse(/<script type="importmap">(.*?)<\/script>/.exec(page.text)?.[1] ?? '{}') as {
        imports: Record<string, string>
      }
      // Follow the imports from app.js as the browser would: each module is served as JavaScript and parses.
      const loaded = new Set<string>()
      const pending = ['/_sandbox/ui/app.js']
      for (let path = pending.pop(); path !== undefined; path = pending.pop()) {
        if (loaded.has(path)) continue
        loaded.add(path)
        const script = await call(started.url, 'GET', path)
        expect({ path, status: script.status }).toEqual({ path, status: 200 })
        expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
        const file = join(dir, `${loaded.size}.mjs`)
        await writeFile(file, script.text)
        expect(spawnSync(process.execPath, ['--check', file], { encoding: 'utf8' }).stderr).toBe('')
        for (const [, specifier] of script.text.matchAll(/^(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"]/gm)) {
          const mapped = importMap.imports[specifier as string] ?? specifier
          pending.push(new URL(mapped as string, `http://sandbox${path}`).pathname)
        }
      }
      expect(loaded).toContain('/_sandbox/ui/core/service-contract.js')
      expect(loaded.size).toBeGreaterThan(2)
      // Core ships CommonJS beside its ES modules: the browser must get the ES one, which runs as a module.
      const contract = await call(started.url, 'GET', '/_sandbox/ui/core/service-contract.js')
      const contractFile = join(dir, 'service-contract.mjs')
      await writeFile(contractFile, contract.text)
      const imported = spawnSync(
        process.execPath,
        ['--input-type=module', '-e', `console.log((await import(process.argv[1])).RETRY_HOURS)`, contractFile],
        { encoding: 'utf8' },
      )
      expect({ stdout: imported.stdout, stderr: imported.stderr }).toEqual({ stdout: '72\n', stderr: '' })
    } finally {
      child.kill('SIGTERM')
      await exited(child)
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('refuses to advance a real clock, and says so', async () => {
    const { child, started } = await startSandbox([])
    try {
      expect(started.manualClock).toBe(false)
      const result = await runCli(['sandbox', 'advance', '1h', '--base-url', started.url])
      expect(result.code).toBe(1)
      expect(result.stderr).toBe(
        'payhooks sandbox advance: 409: the sandbox runs on a real clock, which only time moves: restart it with `payhooks sandbox --manual-clock` to play the hourly retries with `payhooks sandbox advance`\n',
      )
    } finally {
      child.kill('SIGTERM')
      await exited(child)
    }
  })

  it.each([
    [['sandbox', 'advance', '90'], /"90" is not a duration/],
    [['sandbox', 'advance', '1x'], /"1x" is not a duration/],
    [['sandbox', 'advance'], /missing <duration>/],
    [['sandbox', 'advance', '1h', '--base-url', 'nowhere'], /--base-url must be an absolute http\(s\) URL/],
    [['sandbox', 'emit', 'transaction_settled', '--data', '[1]'], /--data must be a JSON object/],
  ])('exits 2 on bad usage: %j', async (args, message) => {
    const result = await runCli(args)
    expect(result.code).toBe(2)
    expect(result.stderr).toMatch(message)
  })

  it('exits 1 when no sandbox answers', async () => {
    const result = await runCli(['sandbox', 'advance', '1h', '--base-url', `http://127.0.0.1:${REFUSING_PORT}`])
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/^payhooks sandbox advance: cannot reach the sandbox at http:\/\/127\.0\.0\.1:\d+/)
  })
})
