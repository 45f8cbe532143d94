// The signature doctor: each cause it names is confirmed by the altered form verifying, on both HMAC providers.
import * as nodeCrypto from 'node:crypto'
import { sampleEvent } from '@payhooks/testing'
import { describe, expect, it } from 'vitest'
import type { CryptoProvider, RawBody } from '../crypto/crypto-provider.js'
import { nodeCryptoProvider } from '../crypto/node-crypto-provider.js'
import { subtleCryptoProvider } from '../crypto/subtle-crypto-provider.js'
import { DOCTOR_MAX_BODY_BYTES, diagnoseSignature, SANDBOX_TEST_SECRET } from './diagnose.js'
import { HINTS, type SignatureHintCode } from './hints.js'

const secret = 'whsec_doctor_test'
const event = sampleEvent('transaction_settled', { eventId: 'evt_doctor_1' })
const compact = JSON.stringify(event)
const encoder = new TextEncoder()
const hmac = (key: string, body: RawBody) =>
  nodeCrypto.createHmac('sha256', key).update(body).digest('hex').toUpperCase()

/** A body the sender signed, what the receiver got, and what it holds. */
interface Case {
  cause: string
  expected: SignatureHintCode
  signed: RawBody
  received: RawBody
  signedWith?: string
  held?: readonly string[]
  header?: (signature: string) => string
}

// Non-ASCII text, as some senders send it despite the spec's ASCII.
const accented = JSON.stringify({
  ...event,
  data: { ...(event.data as object), transaction_description: 'Café crème' },
})
const utf8 = encoder.encode(accented)
const latin1Bytes = Uint8Array.from(accented, (char) => char.charCodeAt(0))
const doubleEncoded = encoder.encode(String.fromCharCode(...utf8))
const escaped = accented.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
const pretty = JSON.stringify(event, null, 2)
// A sender that sorts keys at every level, as json.dumps(sort_keys=True) does.
const sortedKeys = JSON.stringify(event, (_key, value: unknown) =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : 1)))
    : value,
)

const cases: Case[] = [
  { cause: 'pretty-printed copy of compact JSON', expected: 'body_reserialized', signed: compact, received: pretty },
  { cause: 'compact copy of pretty JSON', expected: 'body_reserialized', signed: pretty, received: compact },
  {
    cause: 'keys reordered (sender sorted them)',
    expected: 'body_reserialized',
    signed: sortedKeys,
    received: compact,
  },
  // The sender's own key order is lost once the receiver sorted them: not recoverable, so not claimed.
  {
    cause: 'keys sorted by the receiver (original order unknowable)',
    expected: 'wrong_secret_or_bytes',
    signed: compact,
    received: sortedKeys,
  },
  {
    cause: 'spaces after , and : added (Python style)',
    expected: 'body_reserialized',
    signed: compact,
    received: compact.replaceAll('","', '", "').replaceAll('":', '": '),
  },
  { cause: '\\u escapes written out', expected: 'body_reserialized', signed: escaped, received: accented },
  { cause: 'trailing LF added', expected: 'trailing_newline', signed: compact, received: `${compact}\n` },
  { cause: 'trailing CRLF added', expected: 'trailing_newline', signed: compact, received: `${compact}\r\n` },
  { cause: 'LF turned into CRLF', expected: 'line_endings', signed: pretty, received: pretty.replaceAll('\n', '\r\n') },
  {
    cause: 'CRLF turned into LF',
    expected: 'line_endings',
    signed: pretty.replaceAll('\n', '\r\n'),
    received: pretty,
  },
  {
    cause: 'BOM added',
    expected: 'byte_order_mark',
    signed: compact,
    received: Uint8Array.from([0xef, 0xbb, 0xbf, ...encoder.encode(compact)]),
  },
  {
    cause: 'BOM dropped',
    expected: 'byte_order_mark',
    signed: Uint8Array.from([0xef, 0xbb, 0xbf, ...encoder.encode(compact)]),
    received: compact,
  },
  {
    cause: 'UTF-8 read as latin-1, written as UTF-8',
    expected: 'body_reencoded',
    signed: utf8,
    received: doubleEncoded,
  },
  { cause: 'UTF-8 text written as latin-1', expected: 'body_reencoded', signed: utf8, received: latin1Bytes },
  {
    cause: 'sha256= before the hex',
    expected: 'header_prefix',
    signed: compact,
    received: compact,
    header: (s) => `sha256=${s.toLowerCase()}`,
  },
  { cause: 'hex in quotes', expected: 'header_prefix', signed: compact, received: compact, header: (s) => `"${s}"` },
  {
    cause: 'secret with a trailing newline',
    expected: 'secret_whitespace',
    signed: compact,
    received: compact,
    held: [`${secret}\n`],
  },
  {
    cause: 'the second secret with spaces around it',
    expected: 'secret_whitespace',
    signed: compact,
    received: compact,
    held: ['whsec_other', ` ${secret} `],
  },
  {
    cause: 'signed with the sandbox test secret',
    expected: 'unheld_secret',
    signed: compact,
    received: compact,
    signedWith: SANDBOX_TEST_SECRET,
  },
  {
    cause: 'signed with a secret nobody told the doctor of',
    expected: 'wrong_secret_or_bytes',
    signed: compact,
    received: compact,
    signedWith: 'whsec_someone_else',
  },
  {
    cause: 'a changed amount',
    expected: 'wrong_secret_or_bytes',
    signed: compact,
    received: compact.replace('"settlement_amount":', '"settlement_amount":1'),
  },
  {
    cause: 'a header with no digest in it',
    expected: 'malformed_header',
    signed: compact,
    received: compact,
    header: () => 'not-a-signature',
  },
  {
    cause: 'a 40-hex (SHA-1 sized) header',
    expected: 'malformed_header',
    signed: compact,
    received: compact,
    header: (s) => s.slice(0, 40),
  },
]

const providers: [string, CryptoProvider][] = [
  ['node:crypto', nodeCryptoProvider(nodeCrypto, Buffer)],
  ['Web Crypto', subtleCryptoProvider(globalThis.crypto.subtle)],
]

describe.each(providers)('signature doctor on %s', (_label, provider) => {
  it.each(cases)('$cause: $expected', async ({ expected, signed, received, signedWith, held, header }) => {
    const signature = hmac(signedWith ?? secret, signed)
    const sent = header ? header(signature) : signature
    const secrets = held ?? [secret]
    // The case is a failure the receiver sees: the plain check refuses it.
    if (/^[0-9A-Fa-f]{64}$/.test(sent)) expect(await provider.match(secrets, received, sent)).toBe(-1)
    const hint = await diagnoseSignature({ secrets, body: received, signature: sent }, provider)
    expect(hint).toEqual(HINTS[expected])
    // Nothing of the secret or the signature in it.
    const text = JSON.stringify(hint)
    for (const key of [...secrets, signedWith ?? secret]) expect(text).not.toContain(key.trim())
    expect(text.toUpperCase()).not.toContain(signature.slice(0, 16))
  })

  it('names which of the other secrets it was given signed the body: unheld_secret', async () => {
    const signature = hmac('whsec_subscription_b', compact)
    const hint = await diagnoseSignature(
      { secrets: [secret], body: compact, signature, otherSecrets: ['whsec_subscription_a', 'whsec_subscription_b'] },
      provider,
    )
    expect(hint.code).toBe('unheld_secret')
    expect(hint.otherSecretIndex).toBe(1)
    expect(JSON.stringify(hint)).not.toContain('whsec_subscription')
  })

  it('does not examine a body larger than DOCTOR_MAX_BODY_BYTES', async () => {
    const big = `${compact.slice(0, -1)},"pad":"${'x'.repeat(DOCTOR_MAX_BODY_BYTES)}"}`
    const signature = hmac(secret, big)
    const hint = await diagnoseSignature({ secrets: [secret], body: `${big}\n`, signature }, provider)
    expect(hint).toEqual(HINTS.not_diagnosed)
  })
})

it('knows the sandbox default test secret', async () => {
  const { defaultSandboxCredentials } = await import('@payhooks/sandbox')
  expect(SANDBOX_TEST_SECRET).toBe(defaultSandboxCredentials.testSecret)
})
