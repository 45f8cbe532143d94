import { spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { resolve } from 'node:path'
import { type CliIo, run } from '@payhooks/cli'
import {
  createWebhooks,
  type MerchantActivatedForPaymentTypeEvent,
  SIGNATURE_HEADER,
  sign,
  type TransactionSettledEvent,
} from '@payhooks/core'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../examples/express/server.js'
import { assertBuilt, exited, runCli, startCli } from '../fixtures/cli-run.js'
import { type RecordingServer, rawHeader, startRecordingServer } from '../fixtures/client-recording-server.js'

const SECRET = 'whsec_cli_test_secret'
const RESELLER_KEY = '77|cliR3s3ll3rS3cr3tK3y'
const USERNAME = 'cli_user'
const API_KEY = 'cliMerchantApiKey123'

function oneLine(stderr: string): string {
  const lines = stderr.trimEnd().split('\n')
  expect(lines).toHaveLength(1)
  expect(stderr).not.toMatch(/^\s+at /m)
  return lines[0] as string
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

function close(server: Server): Promise<void> {
  server.closeAllConnections()
  return new Promise((resolve) => server.close(() => resolve()))
}

/** core's receiver behind node:http, through its web-standard `handle(Request)`. */
async function startCoreReceiver(secret: string | (() => string)) {
  const settled: TransactionSettledEvent[] = []
  const activated: MerchantActivatedForPaymentTypeEvent[] = []
  const webhooks = createWebhooks({
    secret: typeof secret === 'string' ? secret : () => secret(),
    logger: { error() {} },
  })
  webhooks
    .on('transaction_settled', (event) => {
      settled.push(event)
    })
    .on('merchant_activated_for_payment_type', (event) => {
      activated.push(event)
    })
  const server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', async () => {
      const headers = new Headers()
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value)
      const request = new Request(`http://127.0.0.1${req.url}`, {
        method: req.method,
        headers,
        body: req.method === 'GET' || req.method === 'HEAD' ? undefined : Buffer.concat(chunks),
      })
      const response = await webhooks.handle(request)
      const outgoing: Record<string, string> = {}
      response.headers.forEach((value, name) => {
        outgoing[name] = value
      })
      res.writeHead(response.status, outgoing).end(await response.text())
    })
  })
  const url = `${await listen(server)}/webhooks`
  return { url, settled, activated, close: () => close(server) }
}

beforeAll(() => assertBuilt())

describe('help and usage', () => {
  it('prints the command list with --help and exits 0', async () => {
    const { code, stdout } = await runCli(['--help'])
    expect(code).toBe(0)
    for (const command of [
      'subscriptions list',
      'resend',
      'test-event',
      'token',
      'sign',
      'verify',
      'trigger',
      'sandbox',
    ]) {
      expect(stdout).toContain(command)
    }
  })

  it("prints a command's help with its options", async () => {
    const create = await runCli(['subscriptions', 'create', '--help'])
    expect(create.code).toBe(0)
    expect(create.stdout).toContain('--all-merchants')
    expect(create.stdout).toContain('PAYHOOKS_RESELLER_KEY')
    const trigger = await runCli(['help', 'trigger'])
    expect(trigger.code).toBe(0)
    expect(trigger.stdout).toContain('--duplicate')
  })

  it.each([
    [[], /Usage: payhooks <command>/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['sign', '--secret', 's', '--bogus'], /unknown option --bogus/],
    [['verify', '--signature', 'AB'], /--secret is required/],
    [['subscriptions', 'get'], /missing <id>/],
    [['subscriptions', 'list'], /--base-url is required \(or set PAYHOOKS_BASE_URL\)/],
    [['trigger', 'transaction_settled', '--to', 'nowhere', '--secret', 's'], /--to must be an absolute http\(s\) URL/],
  ])('exits 2 on bad usage: %j', async (args, message) => {
    const { code, stderr } = await runCli(args)
    expect(code).toBe(2)
    expect(stderr).toMatch(message)
    if (args.length > 0) oneLine(stderr)
  })
})

describe('sign and verify', () => {
  const body = Buffer.from('{"event_id":"evt_1","amount": 10.30 }\n\xff', 'latin1')

  it('sign prints the header value of the exact bytes on stdin', async () => {
    const { code, stdout } = await runCli(['sign', '--secret', SECRET], { input: body })
    expect(code).toBe(0)
    expect(stdout).toBe(`${await sign(SECRET, body)}\n`)
    const json = await runCli(['sign', '--secret', SECRET, '--json'], { input: body })
    expect(JSON.parse(json.stdout)).toEqual({ header: SIGNATURE_HEADER, signature: await sign(SECRET, body) })
  })

  it('verify accepts what sign printed and rejects a tampered body or another secret', async () => {
    const signature = (await runCli(['sign', '--secret', SECRET], { input: body })).stdout.trim()
    const valid = await runCli(['verify', '--secret', SECRET, '--signature', signature], { input: body })
    expect([valid.code, valid.stdout]).toEqual([0, 'valid\n'])

    const tampered = Buffer.from(body.toString('latin1').replace('10.30', '10.3'), 'latin1')
    const invalid = await runCli(['verify', '--secret', SECRET, '--signature', signature], { input: tampered })
    expect(invalid.code).toBe(1)
    expect(oneLine(invalid.stderr)).toBe('payhooks verify: invalid signature: it does not match the body')

    const other = await runCli(['verify', '--secret', 'whsec_other', '--signature', signature, '--json'], {
      input: body,
    })
    expect(other.code).toBe(1)
    expect(JSON.parse(other.stdout)).toEqual({ valid: false })

    const rotated = await runCli(['verify', '--secret', 'whsec_old', '--secret', SECRET, '--signature', signature], {
      input: body,
    })
    expect(rotated.code).toBe(0)
  })

  it('verify exits 1 on a signature that is not 64 hex characters, and reads the secret from the environment', async () => {
    const result = await runCli(['verify', '--signature', 'not-hex'], {
      input: body,
      env: { PAYHOOKS_WEBHOOK_SECRET: SECRET },
    })
    expect(result.code).toBe(1)
    expect(oneLine(result.stderr)).toMatch(/not 64 hex characters/)
  })
})

describe('verify --explain', () => {
  const event = { event_type: 'transaction_settled', event_id: 'evt_explain', data: { settlement_amount: 10.3 } }
  const compact = JSON.stringify(event)

  /** Runs `payhooks verify --explain` in this process on `input`; its exit code, stdout and stderr. */
  async function explain(args: string[], input: string | Uint8Array) {
    const stdout: string[] = []
    const stderr: string[] = []
    const io: CliIo = {
      stdin: [typeof input === 'string' ? new TextEncoder().encode(input) : input],
      stdout: { write: (text: string) => stdout.push(text) },
      stderr: { write: (text: string) => stderr.push(text) },
      env: {},
    }
    const code = await run(['verify', '--explain', ...args], io)
    return { code, stdout: stdout.join(''), stderr: stderr.join('') }
  }

  it.each([
    ['a trailing newline (echo)', `${compact}\n`, SECRET, (s: string) => s, 'trailing_newline'],
    ['pretty-printed JSON', JSON.stringify(event, null, 2), SECRET, (s: string) => s, 'body_reserialized'],
    ['a sha256= prefix', compact, SECRET, (s: string) => `sha256=${s}`, 'header_prefix'],
    ['the sandbox test secret', compact, 'sandbox-test-secret', (s: string) => s, 'unheld_secret'],
    ['a secret nobody holds', compact, 'whsec_nobody', (s: string) => s, 'wrong_secret_or_bytes'],
  ])('prints the diagnosis of %s', async (_cause, received, signedWith, header, code) => {
    const signature = header(await sign(signedWith, compact))
    const result = await explain(['--secret', SECRET, '--signature', signature], received)
    expect(result.code).toBe(1)
    const lines = result.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(2)
    expect(lines[1]).toMatch(new RegExp(`^payhooks verify: hint ${code}: .+`))
    expect(result.stderr).not.toContain(SECRET)
    expect(result.stderr).not.toContain(signedWith)
  })

  it('diagnoses a secret with whitespace around it, as read from a .env file', async () => {
    const signature = await sign(SECRET, compact)
    const result = await explain(['--secret', `${SECRET}\n`, '--signature', signature, '--json'], compact)
    expect(result.code).toBe(1)
    expect(JSON.parse(result.stdout)).toEqual({
      valid: false,
      hint: { code: 'secret_whitespace', message: expect.any(String) },
    })
  })

  it('names which --other-secret signed the body, without printing it', async () => {
    const signature = await sign('whsec_sub_b', compact)
    const args = ['--secret', SECRET, '--other-secret', 'whsec_sub_a', '--other-secret', 'whsec_sub_b']
    const result = await explain([...args, '--signature', signature], compact)
    expect(result.stderr.trimEnd().split('\n')[1]).toBe(
      'payhooks verify: hint unheld_secret: the body was signed with --other-secret number 2, not with any --secret.',
    )
    expect(result.stderr).not.toContain('whsec_sub')
  })

  it('prints just valid for a valid signature, and refuses --other-secret without --explain', async () => {
    const signature = await sign(SECRET, compact)
    expect(await explain(['--secret', SECRET, '--signature', signature], compact)).toEqual({
      code: 0,
      stdout: 'valid\n',
      stderr: '',
    })
    const usage = await runCli(['verify', '--secret', SECRET, '--other-secret', 'x', '--signature', signature], {
      input: compact,
    })
    expect(usage.code).toBe(2)
    expect(usage.stderr).toContain('--other-secret needs --explain')
  })
})

describe('run() without a process', () => {
  it('takes its input, output and environment from the io it is given', async () => {
    const stdout: string[] = []
    const stderr: string[] = []
    const io = (stdin: CliIo['stdin'], env: Record<string, string> = {}): CliIo => ({
      stdin,
      stdout: { write: (text: string) => stdout.push(text) },
      stderr: { write: (text: string) => stderr.push(text) },
      env,
    })
    const body = new TextEncoder().encode('{"event_id":"evt_io"}')
    expect(await run(['sign'], io([body], { PAYHOOKS_WEBHOOK_SECRET: SECRET }))).toBe(0)
    expect(stdout).toEqual([`${await sign(SECRET, body)}\n`])
    expect(await run(['sign'], io([body]))).toBe(2)
    expect(stderr).toEqual([
      "payhooks sign: --secret is required (or set PAYHOOKS_WEBHOOK_SECRET); see 'payhooks sign --help'\n",
    ])
  })
})

describe('service commands against a recording server', () => {
  let server: RecordingServer
  const subscription = {
    id: 'whs_cli_1',
    url: 'https://shop.example.com/webhooks',
    event_types: ['transaction_settled'],
    is_active: true,
    signature_secret: 'whsec_from_service',
  }
  const resellerEnv = () => ({ PAYHOOKS_BASE_URL: server.url, PAYHOOKS_RESELLER_KEY: RESELLER_KEY })
  const merchantFlags = () => ['--base-url', server.url, '--username', USERNAME, '--api-key', API_KEY]

  beforeAll(async () => {
    server = await startRecordingServer()
  })
  afterAll(() => server.close())
  afterEach(() => {
    server.requests.length = 0
  })

  it('subscriptions list: reseller key and merchant id from the environment, table and --json output', async () => {
    const answer = { total_item_count: 2, data: [subscription, { ...subscription, id: 'whs_cli_2', is_active: false }] }
    server.respond(() => ({ status: 200, body: answer }))
    const env = { ...resellerEnv(), PAYHOOKS_MERCHANT_ID: '1234' }
    const table = await runCli(['subscriptions', 'list'], { env })
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^ID\s+URL\s+EVENT TYPES\s+ACTIVE$/m)
    expect(table.stdout).toMatch(/^whs_cli_2\s+https:\/\/shop\.example\.com\/webhooks\s+transaction_settled\s+no$/m)
    expect(table.stdout).toContain('2 of 2 subscription(s)')

    const json = await runCli(['subscriptions', 'list', '--json'], { env })
    expect(JSON.parse(json.stdout)).toEqual(answer)
    for (const request of server.requests) {
      expect([request.method, request.path]).toEqual(['GET', '/ps/webhook/subscriptions'])
      expect(rawHeader(request, 'authorization')).toEqual([`reseller ${RESELLER_KEY}`])
      expect(rawHeader(request, 'service-merchant-id')).toEqual(['1234'])
    }
    expect(server.requests).toHaveLength(2)
  })

  it('subscriptions create with merchant credentials sends basic auth and prints id and signature_secret', async () => {
    server.respond(() => ({ status: 200, body: { data: { id: 'whs_new', signature_secret: 'whsec_new' } } }))
    const args = ['subscriptions', 'create', ...merchantFlags(), '--url', 'https://shop.example.com/h']
    const result = await runCli([
      ...args,
      '--event-type',
      'transaction_settled,transaction_returned',
      '--inactive',
      '--json',
    ])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ id: 'whs_new', signature_secret: 'whsec_new' })
    const [request] = server.requests
    expect(rawHeader(request!, 'authorization')).toEqual([`basic ${USERNAME}:${API_KEY}`])
    expect(rawHeader(request!, 'service-merchant-id')).toEqual([])
    expect(JSON.parse(request!.body)).toEqual({
      url: 'https://shop.example.com/h',
      event_types: ['transaction_settled', 'transaction_returned'],
      is_active: false,
    })
  })

  it('subscriptions create with a reseller key and no merchant needs --all-merchants', async () => {
    server.respond(() => ({ status: 200, body: { data: { id: 'whs_all', signature_secret: 's' } } }))
    const args = [
      'subscriptions',
      'create',
      '--url',
      'https://p.example.com/h',
      '--event-type',
      'merchant_activated_for_payment_type',
    ]
    const refused = await runCli(args, { env: resellerEnv() })
    expect(refused.code).toBe(2)
    expect(oneLine(refused.stderr)).toMatch(/ALL your merchants: add --all-merchants/)
    expect(server.requests).toHaveLength(0)

    const created = await runCli([...args, '--all-merchants'], { env: resellerEnv() })
    expect(created.code).toBe(0)
    expect(created.stdout).toMatch(/^id\s+whs_all$/m)
    expect(server.requests).toHaveLength(1)
    expect(rawHeader(server.requests[0]!, 'service-merchant-id')).toEqual([])

    const conflicting = await runCli([...args, '--all-merchants', '--merchant', '5'], { env: resellerEnv() })
    expect(conflicting.code).toBe(2)
    expect(server.requests).toHaveLength(1)
  })

  it('flags take precedence over the environment, credentials as a whole', async () => {
    server.respond(() => ({ status: 200, body: { total_item_count: 0, data: [] } }))
    const env = { PAYHOOKS_BASE_URL: server.url, PAYHOOKS_USERNAME: 'env_user', PAYHOOKS_API_KEY: 'env_key' }
    const result = await runCli(['subscriptions', 'list', '--reseller-key', RESELLER_KEY, '--merchant', '9'], { env })
    expect(result.code).toBe(0)
    expect(rawHeader(server.requests[0]!, 'authorization')).toEqual([`reseller ${RESELLER_KEY}`])
    expect(rawHeader(server.requests[0]!, 'service-merchant-id')).toEqual(['9'])
  })

  it('subscriptions update reads the fields it is not given and sends them back without the secret', async () => {
    server.respond((request) =>
      request.method === 'GET' ? { status: 200, body: { data: subscription } } : { status: 204 },
    )
    const result = await runCli(['subscriptions', 'update', 'whs_cli_1', '--inactive', '--json', ...merchantFlags()])
    expect(result.code).toBe(0)
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /ps/webhook/subscription/whs_cli_1',
      'PUT /ps/webhook/subscription/whs_cli_1',
    ])
    const sent = { url: subscription.url, event_types: subscription.event_types, is_active: false }
    expect(JSON.parse(server.requests[1]!.body)).toEqual(sent)
    expect(JSON.parse(result.stdout)).toEqual({ id: 'whs_cli_1', ...sent })
  })

  it('subscriptions get and delete', async () => {
    server.respond((request) =>
      request.method === 'GET' ? { status: 200, body: { data: subscription } } : { status: 204 },
    )
    const got = await runCli(['subscriptions', 'get', 'whs_cli_1', ...merchantFlags()])
    expect(got.code).toBe(0)
    expect(got.stdout).toMatch(/^signature_secret\s+whsec_from_service$/m)
    const deleted = await runCli(['subscriptions', 'delete', 'whs_cli_1', ...merchantFlags(), '--json'])
    expect(deleted.code).toBe(0)
    expect(JSON.parse(deleted.stdout)).toEqual({ id: 'whs_cli_1', deleted: true })
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /ps/webhook/subscription/whs_cli_1',
      'DELETE /ps/webhook/subscription/whs_cli_1',
    ])
  })

  it('resend sends the ids; test-event exits 1 when the target did not answer 2XX', async () => {
    server.respond((request) =>
      request.path.endsWith('manually_resend_webhooks')
        ? { status: 204 }
        : request.method === 'GET'
          ? { status: 200, body: { total_item_count: 0, data: [] } }
          : {
              status: 200,
              body: {
                data: { status_code: JSON.parse(request.body).event_type === 'transaction_settled' ? 200 : 500 },
              },
            },
    )
    const env = { ...resellerEnv(), PAYHOOKS_MERCHANT_ID: '1234' }
    const resent = await runCli(['resend', 'evt_1', 'evt_2'], { env })
    expect(resent.code).toBe(0)
    expect(JSON.parse(server.requests[0]!.body)).toEqual({ ids: ['evt_1', 'evt_2'] })

    const ok = await runCli(
      ['test-event', '--url', 'https://x.example/h', '--event-type', 'transaction_settled', '--json'],
      {
        env,
      },
    )
    expect([ok.code, JSON.parse(ok.stdout)]).toEqual([0, { status_code: 200, signed_with: 'test_secret' }])
    expect(JSON.parse(server.requests[1]!.body)).toEqual({
      url: 'https://x.example/h',
      event_type: 'transaction_settled',
    })
    const failing = await runCli(
      ['test-event', '--url', 'https://x.example/h', '--event-type', 'transaction_returned'],
      {
        env,
      },
    )
    expect(failing.code).toBe(1)
    expect(failing.stdout).toContain('answered 500')
  })

  it.each([
    [['subscriptions', 'create', '--url', 'https://shop.example.com/h', '--event-type', 'transaction_setled']],
    [['subscriptions', 'update', 'whs_cli_1', '--event-type', 'transaction_settled,Transaction_Returned']],
    [['test-event', '--url', 'https://shop.example.com/h', '--event-type', 'transaction_setled']],
  ])('refuses an event type the spec does not name, with a hint, unless allowed: %j', async (args) => {
    server.respond((request) =>
      request.method === 'GET' && request.path.endsWith('/subscriptions')
        ? { status: 200, body: { total_item_count: 0, data: [] } }
        : request.method === 'GET'
          ? { status: 200, body: { data: subscription } }
          : request.method === 'PUT'
            ? { status: 204 }
            : request.path.endsWith('/test')
              ? { status: 200, body: { data: { status_code: 200 } } }
              : { status: 200, body: { data: { id: 'whs_new', signature_secret: 'whsec_new' } } },
    )
    const refused = await runCli([...args, ...merchantFlags()])
    expect(refused.code).toBe(2)
    const line = oneLine(refused.stderr)
    expect(line).toMatch(/ is not one the spec names \(did you mean transaction_(settled|returned)\?\): it names /)
    expect(line).toContain('pass --allow-unknown-event-type to send it anyway')
    expect(server.requests).toHaveLength(0)

    const allowed = await runCli([...args, ...merchantFlags(), '--allow-unknown-event-type', '--json'])
    expect([allowed.code, allowed.stderr]).toEqual([0, ''])
    const sent = server.requests.find((r) => r.method !== 'GET')
    expect(sent).toBeDefined()
    const body = JSON.parse(sent!.body) as { event_types?: string[]; event_type?: string }
    expect(body.event_types ?? [body.event_type]).toEqual(
      args.includes('update') ? ['transaction_settled', 'Transaction_Returned'] : ['transaction_setled'],
    )
  })

  it('test-event says which secret signed the message, and hints at it when the target answered 401', async () => {
    const mine = { ...subscription, id: 'whs_for_url', url: 'https://shop.example.com/hook' }
    let targetStatus = 200
    server.respond((request) =>
      request.method === 'GET'
        ? { status: 200, body: { total_item_count: 2, data: [subscription, mine] } }
        : { status: 200, body: { data: { status_code: targetStatus } } },
    )
    const test = (url: string, ...extra: string[]) =>
      runCli(['test-event', '--url', url, '--event-type', 'transaction_settled', ...merchantFlags(), ...extra])

    const bySubscription = await test(mine.url)
    expect(bySubscription.code).toBe(0)
    expect(bySubscription.stdout).toBe(
      'The target answered 200 to the test transaction_settled message\nSigned with the signature_secret of subscription whs_for_url, yours for this url\n',
    )
    expect(bySubscription.stderr).toBe('')
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /ps/webhook/subscription/test',
      'GET /ps/webhook/subscriptions',
    ])

    targetStatus = 401
    const rejected = await test(mine.url, '--json')
    expect(rejected.code).toBe(1)
    expect(JSON.parse(rejected.stdout)).toEqual({
      status_code: 401,
      signed_with: 'subscription',
      subscription_id: 'whs_for_url',
    })
    expect(oneLine(rejected.stderr)).toBe(
      'payhooks test-event: hint: the target answered 401, so its signature check probably failed: it must verify with the signature_secret of subscription whs_for_url (see payhooks subscriptions get whs_for_url)',
    )

    const byTestSecret = await test('https://elsewhere.example.com/h')
    expect(byTestSecret.code).toBe(1)
    expect(byTestSecret.stdout).toContain(
      'Signed with the test secret ("sandbox-test-secret" in the payhooks sandbox unless started with another): none of your subscriptions has this url',
    )
    expect(oneLine(byTestSecret.stderr)).toMatch(
      /hint: .* signed with the test secret, not a subscription's; subscribe https:\/\/elsewhere\.example\.com\/h first \(payhooks subscriptions create --url https:\/\/elsewhere\.example\.com\/h \.\.\.\)/,
    )

    targetStatus = 200
    server.respond((request) =>
      request.method === 'GET'
        ? { status: 403, body: 'not allowed' }
        : { status: 200, body: { data: { status_code: targetStatus } } },
    )
    const unknown = await test(mine.url)
    expect(unknown.code).toBe(0)
    expect(unknown.stdout).toMatch(/^Could not tell which secret signed it \(subscriptions\.list: .*answered 403/m)
  })

  it('token posts the merchant and the reseller key and prints the expiry', async () => {
    server.respond(() => ({ status: 200, body: { data: { token: 'eyJ.cli.jwt', expires: '2026-11-02T16:00:00Z' } } }))
    const result = await runCli(['token', '--merchant', '1234', '--json'], { env: resellerEnv() })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ token: 'eyJ.cli.jwt', expires: '2026-11-02T16:00:00.000Z' })
    expect(server.requests[0]!.path).toBe('/ps/auth/reseller_client_token')
    expect(JSON.parse(server.requests[0]!.body)).toEqual({ client_id: 1234, api_key: RESELLER_KEY })
  })

  it('exits 1 with one redacted line when the service says no', async () => {
    server.respond((request) => ({ status: 401, body: `invalid credentials ${request.headers.authorization}` }))
    const result = await runCli(['subscriptions', 'list', '--merchant', '1'], { env: resellerEnv() })
    expect(result.code).toBe(1)
    const line = oneLine(result.stderr)
    expect(line).toMatch(
      /^payhooks subscriptions list: GET \/ps\/webhook\/subscriptions answered 401 Unauthorized \(the service refused the credentials\): /,
    )
    expect(line).toContain('[redacted]')
    expect(result.stderr + result.stdout).not.toContain(RESELLER_KEY.split('|')[1])
  })

  it('exits 1 when the service cannot be reached', async () => {
    const closed = await startRecordingServer()
    await closed.close()
    const result = await runCli([
      'subscriptions',
      'list',
      '--base-url',
      closed.url,
      '--username',
      'u',
      '--api-key',
      'k',
    ])
    expect(result.code).toBe(1)
    expect(oneLine(result.stderr)).toMatch(/ECONNREFUSED/)
  })
})

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
