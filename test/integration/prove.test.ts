// `payhooks prove` run as users run it (the built CLI in a child process) against real receivers on 127.0.0.1: a kit
// receiver on every adapter, hand-written ones that keep or break the contract, one answering after 11 s.
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { RequestListener } from 'node:http'
import { type CliIo, run } from '@payhooks/cli'
import { lambdaWebhooks } from '@payhooks/lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../examples/express/server.js'
import { adapterApps, listen, SECRET, testWebhooks } from '../fixtures/apps.js'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { lambdaEvent } from '../fixtures/lambda-events.js'
import { REFUSING_PORT } from '../fixtures/sandbox-receivers.js'

interface Report {
  run: string
  requests: number
  onceOnly: { checked: boolean; passed?: boolean; problems?: string[] }
  checks: {
    id: string
    verdict: string
    finding: string
    answers: { label: string; status?: number; ms: number; eventId?: string }[]
  }[]
  summary: { pass: number; warn: number; fail: number }
}

/** The ledger the docs describe: handler runs per event id, served as JSON on its own loopback server. */
async function ledgerServer(runs: Map<string, number>) {
  return listen((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(Object.fromEntries(runs)))
  })
}

/** The CLI in this process (as cli.test.ts runs most commands): many runs side by side stay cheap. */
async function runHere(args: string[], env: Record<string, string> = {}) {
  const stdout: string[] = []
  const stderr: string[] = []
  const io: CliIo = {
    stdin: [],
    stdout: { write: (text: string) => stdout.push(text) },
    stderr: { write: (text: string) => stderr.push(text) },
    env,
  }
  const code = await run(args, io)
  return { code, stdout: stdout.join(''), stderr: stderr.join('') }
}

async function prove(url: string, extra: string[] = [], env: Record<string, string> = {}) {
  const result = await runHere(['prove', '--url', url, '--json', ...extra], env)
  const report = result.stdout === '' ? undefined : (JSON.parse(result.stdout) as Report)
  return { ...result, report }
}

/**
 * The checks that did not pass, with what prove saw: `[]` when all passed. A refusal slower than 2 s is a WARN of
 * timing alone, which a CI machine shared by many jobs can cause; it is left out.
 */
const notPassed = (report: Report | undefined) =>
  (report?.checks ?? [])
    .filter((c) => c.verdict !== 'PASS' && !(c.verdict === 'WARN' && /^refused, but slowly/.test(c.finding)))
    .map((c) => `${c.id} ${c.verdict}: ${c.finding}`)

const verdicts = (report: Report | undefined) =>
  Object.fromEntries((report?.checks ?? []).map((check) => [check.id, check.verdict]))
const check = (report: Report | undefined, id: string) => report?.checks.find((c) => c.id === id)

/** Lambda has no server of its own: its handler behind node:http, each request turned into a function URL event. */
function lambdaListener(handler: ReturnType<typeof lambdaWebhooks>): RequestListener {
  return (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers[name] = value
      const body = Buffer.concat(chunks)
      const result = await handler(lambdaEvent('function-url', { method: req.method ?? 'GET', headers, body }))
      res.writeHead(result.statusCode, result.headers).end(result.body)
    })
  }
}

interface HandOptions {
  /** Acknowledges bodies whatever their signature, as a receiver that never checks it does. */
  skipSignature?: boolean
  /** The first event of this type is answered after 11 s. */
  slowType?: string
  /** Events of this type are answered 200 and dropped: no handler runs. */
  dropType?: string
}

/**
 * A receiver written by hand, without the kit, keeping the contract unless told otherwise: HMAC of the raw body,
 * 1 MiB cap, 405, 400, events over 73 h old refused, a duplicate 200, a copy in progress 409; `GET /ledger`.
 */
async function handReceiver(options: HandOptions = {}) {
  const runs = new Map<string, number>()
  const done = new Set<string>()
  const running = new Set<string>()
  let slowed = false
  const server = await listen((req, res) => {
    const answer = (status: number, body: object, headers: Record<string, string> = {}) =>
      res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body))
    if (req.method === 'GET' && req.url === '/ledger') return answer(200, Object.fromEntries(runs))
    if (req.method !== 'POST') return answer(405, { error: 'use POST' }, { allow: 'POST' })
    if (Number(req.headers['content-length']) > 1_048_576)
      return answer(413, { error: 'too large' }, { connection: 'close' })
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const raw = Buffer.concat(chunks)
      const expected = Buffer.from(createHmac('sha256', SECRET).update(raw).digest('hex').toUpperCase())
      const given = Buffer.from(String(req.headers['service-hmac-sha256'] ?? ''))
      if (!options.skipSignature && (given.length !== expected.length || !timingSafeEqual(given, expected))) {
        return answer(401, { error: 'bad signature' })
      }
      let event: { event_id?: unknown; event_type?: unknown; created_at?: unknown }
      try {
        event = JSON.parse(raw.toString('utf8'))
      } catch {
        return answer(400, { error: 'not JSON' })
      }
      const id = String(event.event_id)
      if (typeof event.created_at === 'string' && Date.now() - Date.parse(event.created_at) > 73 * 3_600_000) {
        return answer(422, { error: 'too old to take; replay it from the service' })
      }
      if (done.has(id)) return answer(200, { status: 'duplicate' })
      if (running.has(id)) return answer(409, { error: 'in progress' })
      running.add(id)
      if (event.event_type === options.slowType && !slowed) {
        slowed = true
        await new Promise((resolve) => setTimeout(resolve, 11_000))
      }
      if (event.event_type !== options.dropType) runs.set(id, (runs.get(id) ?? 0) + 1)
      done.add(id)
      running.delete(id)
      answer(200, { status: 'processed' })
    })
  })
  return { ...server, webhooks: `${server.url}/webhooks`, ledger: `${server.url}/ledger`, runs }
}

beforeAll(() => assertBuilt())

describe('payhooks prove', () => {
  // The run against a receiver answering after 11 s takes that long: it starts first and runs beside the others.
  let slow: Promise<{ code: number | null; report: Report }>
  let slowReceiver: Awaited<ReturnType<typeof handReceiver>>
  beforeAll(async () => {
    slowReceiver = await handReceiver({ slowType: 'transaction_settled' })
    // As users run it: the built CLI in a child process.
    slow = runCli(['prove', '--url', slowReceiver.webhooks, '--secret', SECRET, '--json'], { timeoutMs: 40_000 }).then(
      (result) => ({ ...result, report: JSON.parse(result.stdout) as Report }),
    )
  })
  afterAll(() => slowReceiver.close())

  describe.concurrent('passes against a kit receiver', () => {
    const apps = [
      ...adapterApps.map(({ name, makeApp }) => ({ name, makeApp })),
      {
        name: 'lambda (its handler behind node:http, as a function URL event)',
        makeApp: (webhooks: Parameters<(typeof adapterApps)[number]['makeApp']>[0]) =>
          lambdaListener(lambdaWebhooks(webhooks)),
      },
    ]
    it.each(apps)('on $name, with a ledger of its handler runs', async ({ makeApp }) => {
      const { webhooks } = testWebhooks()
      const runs = new Map<string, number>()
      webhooks.onAny((event) => {
        runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
      })
      const app = await listen(await makeApp(webhooks))
      const ledger = await ledgerServer(runs)
      try {
        const { code, report, stderr } = await prove(`${app.url}/webhooks`, ['--ledger', ledger.url], {
          PAYHOOKS_WEBHOOK_SECRET: SECRET,
        })
        expect(stderr).toBe('')
        expect(notPassed(report)).toEqual([])
        expect(report?.summary.fail).toBe(0)
        expect(report?.onceOnly).toMatchObject({ checked: true, passed: true, problems: [] })
        expect(code).toBe(0)
        // Each acknowledged event of the series ran its handlers once, under an id that says it came from prove.
        const ids = [...runs.keys()]
        expect(ids.length).toBeGreaterThanOrEqual(8)
        for (const id of ids) expect(id).toMatch(new RegExp(`^evt_prove_${report?.run}_\\d+$`))
        expect([...runs.values()].every((count) => count === 1)).toBe(true)
        expect(report?.requests).toBeLessThanOrEqual(30)
      } finally {
        await Promise.all([app.close(), ledger.close()])
      }
    })
  })

  describe.concurrent('against hand-written receivers', () => {
    it('passes one that keeps the contract', async () => {
      const receiver = await handReceiver()
      try {
        const { code, report } = await prove(receiver.webhooks, ['--secret', SECRET, '--ledger', receiver.ledger])
        expect(notPassed(report)).toEqual([])
        expect(code).toBe(0)
      } finally {
        await receiver.close()
      }
    })

    it('fails one that acknowledges unsigned bodies, naming the signature', async () => {
      const receiver = await handReceiver({ skipSignature: true })
      try {
        const { code, report, stdout } = await prove(receiver.webhooks, ['--secret', SECRET])
        expect(code).toBe(1)
        expect(verdicts(report)).toMatchObject({
          'no-signature': 'FAIL',
          'wrong-secret': 'FAIL',
          'body-changed': 'FAIL',
        })
        expect(check(report, 'no-signature')?.finding).toMatch(/acknowledged a body without service-hmac-sha256/)
        expect(check(report, 'no-signature')?.answers[0]?.status).toBe(200)
        expect(stdout).not.toContain(SECRET)
      } finally {
        await receiver.close()
      }
    })

    it('fails one that answers 200 to an event it then drops, naming the loss (with --ledger)', async () => {
      const receiver = await handReceiver({ dropType: 'transaction_returned' })
      try {
        const args = ['--secret', SECRET, '--ledger', receiver.ledger, '--ledger-wait-ms', '300']
        const { code, report } = await prove(receiver.webhooks, args)
        expect(code).toBe(1)
        const dropped = check(report, 'valid-transaction_returned')
        expect(dropped?.verdict).toBe('FAIL')
        expect(dropped?.answers[0]?.status).toBe(200)
        expect(dropped?.finding).toMatch(/answered 2XX but the ledger shows its handlers never ran .*: a lost event/)
        expect(report?.summary.fail).toBe(1)
        expect(report?.onceOnly).toMatchObject({
          checked: true,
          passed: false,
          problems: [`${dropped?.answers[0]?.eventId}: acknowledged, ran 0 times`],
        })
      } finally {
        await receiver.close()
      }
    })

    it('fails one that answers after 11 s, naming the 10-second limit', async () => {
      const { code, report } = await slow
      expect(code).toBe(1)
      const late = check(report, 'valid-transaction_settled')
      expect(late?.verdict).toBe('FAIL')
      expect(late?.finding).toMatch(
        /over the service's 10-second limit \(transaction_settled: no answer after 1\d{4} ms\)/,
      )
      expect(check(report, 'ten-second-limit')).toMatchObject({ verdict: 'FAIL' })
      expect(check(report, 'ten-second-limit')?.finding).toMatch(/1 answer\(s\) after the 10-second limit/)
      // Only that request was slow: every other check still passed.
      expect(report?.summary.fail).toBe(2)
    }, 120_000)
  })

  describe.concurrent('usage', () => {
    it('prints the table against the Express example and exits 0', async () => {
      const app = await listen(createApp({ secret: SECRET, log: () => {} }))
      try {
        const { code, stdout, stderr } = await runCli(['prove', '--url', `${app.url}/webhooks`, '--secret', SECRET])
        expect(stderr).toBe('')
        expect(code).toBe(0)
        expect(stdout).toMatch(/^CHECK +RESULT +ANSWER +SEEN$/m)
        expect(stdout).toMatch(/^no-signature +PASS +401 \d+ ms +refused: 401 missing_signature/m)
        expect(stdout).toMatch(/^resend-80h +PASS +422 \d+ ms +refused with a reason: 422 stale_event/m)
        expect(stdout).toMatch(/^ {4}why: anyone can POST to your URL/m)
        expect(stdout).toMatch(/^16 checks: \d+ PASS, \d+ WARN, 0 FAIL; \d+ requests in/m)
        expect(stdout).toMatch(/^once-only: NOT CHECKED \(no --ledger/m)
        // The example keeps no dead letters: the old event is refused 422, nothing is parked.
        expect(stdout).toMatch(/^letters: none parked, by the answers/m)
      } finally {
        await app.close()
      }
    })

    it('exits 2 on bad usage and on an unreachable URL or ledger, sending nothing', async () => {
      const missing = await runHere(['prove', '--secret', SECRET])
      expect([missing.code, missing.stderr]).toEqual([
        2,
        "payhooks prove: --url is required; see 'payhooks prove --help'\n",
      ])
      const noSecret = await runHere(['prove', '--url', 'http://127.0.0.1:1/webhooks'])
      expect(noSecret.code).toBe(2)
      expect(noSecret.stderr).toContain('--secret is required (or set PAYHOOKS_WEBHOOK_SECRET)')
      const ftp = await runHere(['prove', '--url', 'ftp://127.0.0.1/webhooks', '--secret', SECRET])
      expect([ftp.code, ftp.stderr]).toEqual([
        2,
        "payhooks prove: --url must be an http(s) URL; see 'payhooks prove --help'\n",
      ])
      const port = REFUSING_PORT
      const down = await runHere(['prove', '--url', `http://127.0.0.1:${port}/webhooks`, '--secret', SECRET])
      expect(down.code).toBe(2)
      expect(down.stderr).toBe(`payhooks prove: could not reach http://127.0.0.1:${port}/webhooks: ECONNREFUSED\n`)
      const receiver = await handReceiver()
      try {
        const noLedger = await runHere([
          'prove',
          '--url',
          receiver.webhooks,
          '--secret',
          SECRET,
          '--ledger',
          `http://127.0.0.1:${port}/ledger`,
        ])
        expect(noLedger.code).toBe(2)
        expect(noLedger.stderr).toMatch(/^payhooks prove: could not read the ledger .*ECONNREFUSED\n$/)
        expect(receiver.runs.size).toBe(0)
      } finally {
        await receiver.close()
      }
    })
  })
})
