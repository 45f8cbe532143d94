// The CLI alone: help and usage, sign and verify (with --explain), and run() given its io instead of a process.
// Against a service: cli-service; beside receivers and the sandbox: cli-trigger.
import { type CliIo, run } from '@payhooks/cli'
import { SIGNATURE_HEADER, sign } from '@payhooks/core'
import { beforeAll, describe, expect, it } from 'vitest'
import { oneLine, SECRET } from '../fixtures/cli-helpers.js'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'

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
