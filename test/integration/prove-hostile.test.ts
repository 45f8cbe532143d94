// `payhooks prove` against a hostile or careless receiver (issue 51): one whose answers keep the contract's statuses
// but whose bodies are 200 KB of tags that never close, laced with terminal escapes, or 600 MB streamed as long as
// the client reads. The built CLI in a child process, as users run it, against receivers on 127.0.0.1.
import type { IncomingMessage, ServerResponse } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { listen, SECRET, testWebhooks } from '../fixtures/apps.js'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'

/** What a terminal would act on: every control character but the report's own line feeds. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what must not come through
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/

type Body = (res: ServerResponse) => void

/**
 * The kit's receiver decides each status (401, 400, 413, 405, 422 stale_event, 200), then `body` writes the answer's
 * body in place of the kit's.
 */
async function receiver(body: Body) {
  const { webhooks } = testWebhooks({ logger: { error() {} }, checkAtStart: false })
  webhooks.onAny(() => {})
  return listen((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const answer = await webhooks.receive({
        method: req.method ?? 'GET',
        body: new Uint8Array(Buffer.concat(chunks)),
        getHeader: (name) => req.headers[name.toLowerCase()] as string | undefined,
      })
      const { 'content-type': _, 'content-length': __, ...headers } = answer.headers
      res.writeHead(answer.status, { ...headers, 'content-type': 'text/html' })
      body(res)
    })
  })
}

/** 200 KB of opening tags that never close, each followed by escapes that clear the screen and set its title. */
const ADVERSARIAL = '<head\u001b]0;pwned\u0007\u001b[2J\u001b[H\u009b31m\u202e'.repeat(10_000)

beforeAll(() => assertBuilt())

describe('payhooks prove against a hostile receiver', () => {
  const servers: { close(): Promise<void> }[] = []
  afterAll(() => Promise.all(servers.map((server) => server.close())))

  it('reads 200 KB answers of adversarial text and reports them without a control character', async () => {
    expect(ADVERSARIAL.length).toBeGreaterThan(200_000)
    const app = await receiver((res) => res.end(ADVERSARIAL))
    servers.push(app)
    const url = `${app.url}/webhooks`
    const text = await runCli(['prove', '--url', url, '--secret', SECRET], { timeoutMs: 25_000 })
    expect(text.stderr).toBe('')
    expect(text.code).toBe(0)
    expect(text.stdout).toMatch(/^no-signature +PASS +401 \d+ ms +refused: 401$/m)
    expect(text.stdout).not.toMatch(CONTROL)
    const json = await runCli(['prove', '--url', url, '--secret', SECRET, '--json'], { timeoutMs: 25_000 })
    expect(json.code).toBe(0)
    const report = JSON.parse(json.stdout) as { checks: { answers: { reason: string }[] }[] }
    const reasons = report.checks.flatMap((check) => check.answers.map((answer) => answer.reason))
    expect(reasons.length).toBeGreaterThan(10)
    for (const reason of reasons) expect(reason).not.toMatch(CONTROL)
  })

  it('reads 600 MB answers only up to its cap, closing each connection, and finishes without crashing', async () => {
    const total = 600 * 1024 * 1024
    /** Bytes written per answer before the client went away. */
    const written: number[] = []
    const chunk = Buffer.alloc(64 * 1024, '<head>x</head>')
    const app = await receiver((res) => {
      let sent = 0
      res.on('close', () => written.push(sent))
      const pump = () => {
        while (sent < total && !res.destroyed) {
          sent += chunk.length
          if (!res.write(chunk)) return void res.once('drain', pump)
        }
        if (sent >= total) res.end()
      }
      pump()
    })
    servers.push(app)
    const result = await runCli(['prove', '--url', `${app.url}/webhooks`, '--secret', SECRET, '--json'], {
      timeoutMs: 60_000,
    })
    // Exit 1 says a check failed: a crash of prove itself (it was ERR_STRING_TOO_LONG) must never look like one.
    expect(result.stderr).toBe('')
    expect(result.code).toBe(0)
    const report = JSON.parse(result.stdout) as { requests: number; summary: { fail: number } }
    expect(report.summary.fail).toBe(0)
    expect(written.length).toBeGreaterThanOrEqual(report.requests - 1)
    // The cap and what the sockets' buffers hold, never the 600 MB.
    expect(Math.max(...written)).toBeLessThan(32 * 1024 * 1024)
  }, 120_000)
})
