// The signature doctor under bodies shaped to make it work hard, posted unsigned with any 64-hex signature: each
// diagnosis HMACs at most a fixed multiple of the body whatever its shape, and a receiver answers them all 401 with
// a valid delivery sent alongside answered 200. Work is counted in HMAC'd bytes, not timed (timings are in bench/).
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import fc from 'fast-check'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { hostileBodies } from '../../../../test/fixtures/hostile-bodies.js'
import { SignatureError, type WebhookError } from '../errors/index.js'
import { createWebhooks } from '../receiver/create.js'
import type { RawDelivery } from '../types.js'
import { cryptoProvider } from '../verify/signature.js'
import { DOCTOR_MAX_BODY_BYTES, diagnoseSignature } from './diagnose.js'
import { HINTS } from './hints.js'

const secret = 'whsec_doctor_hostile'
const encoder = new TextEncoder()
const signature = 'A1'.repeat(32)

/**
 * The most bytes one failed check and its diagnosis HMAC per secret: the check itself, the byte candidates (seven
 * bodies' worth at most: a BOM added, line endings and latin-1 doubling the length), the sandbox secret and the
 * re-formatted JSON forms (at most 8 bodies' worth and 16 KiB, only for bodies up to 4 KiB).
 */
const hashedBound = (length: number) => 18 * length + 16_384

afterEach(() => {
  vi.restoreAllMocks()
})

/** Counts the bytes every HMAC check hashes from now on, once per secret tried. */
function countHashed(): () => number {
  let hashed = 0
  const match = cryptoProvider.match.bind(cryptoProvider)
  vi.spyOn(cryptoProvider, 'match').mockImplementation((secrets, body, header) => {
    hashed += secrets.length * (typeof body === 'string' ? encoder.encode(body).length : body.length)
    return match(secrets, body, header)
  })
  return () => hashed
}

function receiver() {
  const webhooks = createWebhooks({ secret, logger: { error() {} } })
  const errors: WebhookError[] = []
  const handled: string[] = []
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => void handled.push(event.event_id))
  return { webhooks, errors, handled }
}

const delivery = (body: Uint8Array | string, header: string): RawDelivery => ({
  method: 'POST',
  body,
  getHeader: (name) => (name === 'service-hmac-sha256' ? header : undefined),
})

const shapes = Object.entries(hostileBodies).map(([name, body]) => ({ name, body, length: body.length }))

describe('the signature doctor on hostile shapes', () => {
  it.each(shapes)('$name ($length bytes): a bounded number of bytes hashed, a hint', async ({ body }) => {
    const hashed = countHashed()
    const hint = await diagnoseSignature({ secrets: [secret], body, signature })
    expect(Object.values(HINTS)).toContain(hint)
    expect(hashed()).toBeLessThanOrEqual(hashedBound(body.length))
  })

  it('a receiver answers every shape 401, and a valid delivery sent with them 200, its handler run', async () => {
    const { webhooks, errors, handled } = receiver()
    const hashed = countHashed()
    const event = sampleEvent('transaction_settled', { eventId: 'evt_doctor_hostile_valid' })
    const valid = await signedDelivery(event, secret)
    const hostile = shapes.map(({ body }) => webhooks.receive(delivery(body, signature)))
    const answer = await webhooks.receive(delivery(valid.body, valid.headers['service-hmac-sha256']))
    expect(answer.status).toBe(200)
    expect(handled).toEqual(['evt_doctor_hostile_valid'])
    expect((await Promise.all(hostile)).map((refused) => refused.status)).toEqual(shapes.map(() => 401))
    expect(errors).toHaveLength(shapes.length)
    for (const error of errors) expect(error).toBeInstanceOf(SignatureError)
    const total = shapes.reduce((sum, { length }) => sum + hashedBound(length), encoder.encode(valid.body).length)
    expect(hashed()).toBeLessThanOrEqual(total)
  })
})

/** Text nested `depth` deep, `width` times side by side in an array. */
const nestedText = fc
  .record({
    depth: fc.integer({ min: 0, max: 4_000 }),
    width: fc.integer({ min: 1, max: 16 }),
    kind: fc.constantFrom<[string, string]>(['[', ']'], ['{"a":', '}'], ['{"é東":[', ']}']),
  })
  .map(
    ({ depth, width, kind: [open, close] }) =>
      `[${Array(width)
        .fill(open.repeat(depth) + close.repeat(depth))
        .join(',')}]`,
  )
/** JSON of any shape, written compact or indented, its line endings LF or CRLF. */
const jsonText = fc
  .record({
    value: fc.jsonValue({ maxDepth: 8 }),
    indent: fc.constantFrom(undefined, 2, 4),
    crlf: fc.boolean(),
  })
  .map(({ value, indent, crlf }) => {
    const text = JSON.stringify(value, null, indent) ?? 'null'
    return crlf ? text.replaceAll('\n', '\r\n') : text
  })
/** A short piece of any text (escapes, quotes, non-ASCII, newlines), repeated up to past the doctor's limit. */
const repeatedText = fc
  .record({
    unit: fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
    count: fc.integer({ min: 1, max: 20_000 }),
  })
  .map(({ unit, count }) => unit.repeat(count))
const body = fc.oneof(
  nestedText.map((text) => encoder.encode(text)),
  jsonText.map((text) => encoder.encode(text)),
  repeatedText.map((text) => encoder.encode(text)),
  fc.uint8Array({ maxLength: DOCTOR_MAX_BODY_BYTES }),
)

describe('the signature doctor on random bodies up to its limit', () => {
  it('answers 401 with a hint, hashing at most a fixed multiple of the body', async () => {
    await fc.assert(
      fc.asyncProperty(body, fc.stringMatching(/^[0-9A-F]{64}$/), async (bytes, header) => {
        const { webhooks, errors } = receiver()
        const hashed = countHashed()
        const answer = await webhooks.receive(delivery(bytes, header))
        vi.restoreAllMocks()
        expect(answer.status).toBe(401)
        expect(Object.values(HINTS)).toContain((errors[0] as SignatureError).hint)
        expect(hashed()).toBeLessThanOrEqual(hashedBound(bytes.length))
      }),
      { numRuns: 60 },
    )
  })
})
