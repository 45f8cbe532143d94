import {
  ANSWER_LIMIT_MS,
  diagnoseSignature,
  isSignatureShaped,
  knownEventTypes,
  SIGNATURE_HEADER,
  type SignatureHint,
  sign,
  verify,
} from '@payhooks/core'
import { sampleEvent, sampleEventTypes, signedDelivery } from '@payhooks/testing'
import {
  CommandFailed,
  type Context,
  integerValue,
  out,
  printJson,
  readStdin,
  requireString,
  stringValue,
  UsageError,
  warn,
} from '../context.js'
import { ALLOW_UNKNOWN, allowUnknownOption, checkEventTypes } from '../event-types.js'
import type { CommandSpec, OptionSpec } from '../spec.js'

export const SECRET_ENV = 'PAYHOOKS_WEBHOOK_SECRET'

export const secretOption: OptionSpec = {
  type: 'string',
  arg: '<secret>',
  env: SECRET_ENV,
  help: "the subscription's signature_secret",
}

const signCommand: CommandSpec = {
  name: ['sign'],
  usage: '--secret <secret> < body',
  summary: `Print the ${SIGNATURE_HEADER} value of the body on stdin`,
  details: ['Signs the exact bytes read, so a trailing newline counts: use printf, not echo.'],
  examples: [
    'printf \'%s\' \'{"event_id":"evt_1"}\' | payhooks sign --secret whsec_abc',
    'payhooks sign --secret whsec_abc < body.json',
  ],
  options: { secret: secretOption },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const secret = requireString(ctx, 'secret', SECRET_ENV)
    const signature = await sign(secret, await readStdin(ctx))
    if (ctx.json) printJson(ctx, { header: SIGNATURE_HEADER, signature })
    else out(ctx, signature)
    return 0
  },
}

const verifyCommand: CommandSpec = {
  name: ['verify'],
  usage: '--secret <secret> --signature <hex> [--explain [--other-secret <secret>]...] < body',
  summary: 'Check a signature against the body on stdin: exit 0 when valid, 1 when not',
  details: [
    'Repeat --secret to try several (rotation). With --explain, an invalid signature gets the',
    "receiver's signature doctor diagnosis: re-serialized JSON, a trailing newline, line endings, a BOM,",
    're-encoded bytes, a prefix in the header, a secret with whitespace, or the sandbox test secret.',
    'Give --other-secret (repeatable) for secrets you know of but the receiver does not hold.',
  ],
  examples: [
    'payhooks verify --secret whsec_abc --signature 9F86D0…15D6 < body.json',
    'payhooks verify --explain --secret whsec_abc --signature 9F86D0…15D6 < body.json',
  ],
  options: {
    secret: { ...secretOption, multiple: true },
    signature: { type: 'string', arg: '<hex>', help: `the ${SIGNATURE_HEADER} header value (required)` },
    explain: { type: 'boolean', help: 'on an invalid signature, diagnose its likely cause' },
    'other-secret': {
      type: 'string',
      arg: '<secret>',
      multiple: true,
      help: 'with --explain: a secret the receiver does not hold, to tell whether it signed',
    },
  },
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const flag = ctx.values.secret as string[] | undefined
    const secrets = flag && flag.length > 0 ? flag : [requireString(ctx, 'secret', SECRET_ENV)]
    if (secrets.some((secret) => secret === '')) throw new UsageError('--secret must not be empty')
    const otherSecrets = (ctx.values['other-secret'] as string[] | undefined) ?? []
    if (otherSecrets.length > 0 && ctx.values.explain !== true) throw new UsageError('--other-secret needs --explain')
    if (otherSecrets.some((secret) => secret === '')) throw new UsageError('--other-secret must not be empty')
    const signature = requireString(ctx, 'signature')
    const body = await readStdin(ctx)
    const valid = await verify(secrets, body, signature)
    const hint =
      valid || ctx.values.explain !== true
        ? undefined
        : await diagnoseSignature({ secrets, body, signature, otherSecrets })
    if (ctx.json) printJson(ctx, hint ? { valid, hint } : { valid })
    else if (valid) out(ctx, 'valid')
    else {
      const reason = isSignatureShaped(signature) ? 'it does not match the body' : 'it is not 64 hex characters'
      warn(ctx, `invalid signature: ${reason}`)
      if (hint) warn(ctx, `hint ${hint.code}: ${otherSecretLine(hint) ?? hint.message}`)
    }
    return valid ? 0 : 1
  },
}

/** `unheld_secret` found among the --other-secret values: which one, by its place on the command line. */
function otherSecretLine(hint: SignatureHint): string | undefined {
  if (hint.otherSecretIndex === undefined) return undefined
  return `the body was signed with --other-secret number ${hint.otherSecretIndex + 1}, not with any --secret.`
}

interface Sent {
  event_type: string
  event_id: string
  duplicate: boolean
  status: number
  status_text: string
  elapsed_ms: number
  body: string
}

function parseData(ctx: Context): Record<string, unknown> | undefined {
  const text = stringValue(ctx, 'data')
  if (text === undefined) return undefined
  let data: unknown
  try {
    data = JSON.parse(text)
  } catch {
    throw new UsageError('--data must be a JSON object, as in --data \'{"settlement_amount": -5}\'')
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new UsageError('--data must be a JSON object')
  return data as Record<string, unknown>
}

function checkUrl(text: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new UsageError('--to must be an absolute http(s) URL, as in http://127.0.0.1:3000/webhooks')
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--to must be an http(s) URL')
  return url.href
}

async function post(
  url: string,
  delivery: { body: string; headers: Record<string, string> },
  timeoutMs: number,
): Promise<Omit<Sent, 'event_type' | 'event_id' | 'duplicate'>> {
  const started = performance.now()
  try {
    const response = await fetch(url, {
      method: 'POST',
      body: delivery.body,
      headers: delivery.headers,
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    })
    const body = await response.text()
    return {
      status: response.status,
      status_text: response.statusText,
      elapsed_ms: Math.round(performance.now() - started),
      body,
    }
  } catch (error) {
    if ((error as Error).name === 'TimeoutError')
      throw new CommandFailed(`${url} did not answer within ${timeoutMs} ms`)
    const cause = (error as { cause?: { message?: string } }).cause
    throw new CommandFailed(`could not reach ${url}: ${cause?.message ?? (error as Error).message}`)
  }
}

const trigger: CommandSpec = {
  name: ['trigger'],
  usage: '<event_type> --to <url> --secret <secret> [options]',
  summary: 'Post a signed sample event to your receiver and print its answer',
  details: [
    `Sample events: ${sampleEventTypes.join(', ')}.`,
    'Other types the spec names are sent with the envelope and empty data; a type it does not name is',
    `refused with a suggestion unless --${ALLOW_UNKNOWN} is given. Exits 1 when an answer is not 2XX.`,
  ],
  examples: [
    'payhooks trigger transaction_settled --to http://127.0.0.1:3000/webhooks --secret whsec_abc',
    'payhooks trigger transaction_returned --to http://localhost:3000/webhooks --secret whsec_abc \\\n    --merchant 5678 --data \'{"settlement_code":"R02"}\' --duplicate',
  ],
  options: {
    to: { type: 'string', arg: '<url>', help: 'your receiver (required)' },
    secret: secretOption,
    merchant: { type: 'string', arg: '<id>', help: 'merchant_id of the event (default: the sample’s, 1234)' },
    'event-id': { type: 'string', arg: '<id>', help: 'event_id to use (default: a fresh evt_<uuid> per event)' },
    data: { type: 'string', arg: '<json>', help: 'JSON object merged over the sample’s data' },
    count: { type: 'string', arg: '<n>', help: 'send this many events (default 1)' },
    duplicate: { type: 'boolean', help: 'send every event twice, byte for byte, as the service may' },
    'timeout-ms': { type: 'string', arg: '<ms>', help: 'give up on an answer after this long (default 30000)' },
    [ALLOW_UNKNOWN]: allowUnknownOption,
  },
  positionals: { min: 1, max: 1, name: '<event_type>' },
  async run(ctx) {
    const eventType = ctx.positionals[0] as string
    checkEventTypes(ctx, [eventType])
    const url = checkUrl(requireString(ctx, 'to'))
    const secret = requireString(ctx, 'secret', SECRET_ENV)
    const merchantId = integerValue(ctx, 'merchant', { min: 1, max: Number.MAX_SAFE_INTEGER })
    const eventId = stringValue(ctx, 'event-id')
    const count = integerValue(ctx, 'count', { min: 1, max: 1000 }) ?? 1
    const timeoutMs = integerValue(ctx, 'timeout-ms', { min: 1, max: 2_147_483_647 }) ?? 30_000
    const data = parseData(ctx)
    const sends = ctx.values.duplicate === true ? 2 : 1
    if (!(sampleEventTypes as string[]).includes(eventType)) {
      const listed = (knownEventTypes as readonly string[]).includes(eventType)
      warn(
        ctx,
        `no sample body for ${eventType}${listed ? ' (the spec does not show it)' : ', which is not an event type the spec lists'}: sending the envelope with ${data ? 'your --data' : 'empty data'}`,
      )
    }
    const results: Sent[] = []
    let failed = false
    for (let i = 0; i < count; i++) {
      const event = sampleEvent(eventType, { eventId, merchantId, data })
      const delivery = await signedDelivery(event, secret)
      for (let send = 0; send < sends; send++) {
        const id = event.event_id as string
        if (!ctx.json) out(ctx, `→ POST ${url}  ${eventType} ${id}${send > 0 ? ' (duplicate)' : ''}`)
        const answer = await post(url, delivery, timeoutMs)
        const sent: Sent = { event_type: eventType, event_id: id, duplicate: send > 0, ...answer }
        results.push(sent)
        if (sent.status < 200 || sent.status > 299) failed = true
        if (!ctx.json) {
          out(ctx, `← ${sent.status} ${sent.status_text} in ${sent.elapsed_ms} ms`)
          if (sent.body !== '') out(ctx, sent.body)
        }
        if (sent.elapsed_ms > ANSWER_LIMIT_MS) {
          warn(ctx, `answered after ${sent.elapsed_ms} ms: the service gives up after 10 s and would retry`)
        }
      }
    }
    if (ctx.json) printJson(ctx, { url, deliveries: results })
    return failed ? 1 : 0
  },
}

export const localCommands = [signCommand, verifyCommand, trigger]
