import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createRedactor, MIN_REDACTABLE_LENGTH, redactSecretFields } from './redact.js'

const KEY = '12|Ab/c+d=e&f'
const reseller = createRedactor([
  { value: KEY, label: 'the reseller key', shaped: true },
  { value: 'Ab/c+d=e&f', label: 'the secret part of the reseller key' },
])

describe('createRedactor', () => {
  it.each([
    ['as is', `key ${KEY} end`],
    ['URL-encoded twice', `key ${encodeURIComponent(encodeURIComponent(KEY))} end`],
    ['as decimal HTML entities', `key ${[...KEY].map((c) => `&#${c.charCodeAt(0)};`).join('')} end`],
    ['as hex HTML entities', `key ${[...KEY].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join('')} end`],
    ['with &amp;', `key ${KEY.replace('&', '&amp;')} end`],
    ['form-decoded (+ read as a space)', `key ${KEY.replace('+', ' ')} end`],
    [
      'with its pipe JSON-escaped twice (\\u007C)',
      `key ${JSON.stringify(JSON.stringify(KEY)).slice(3, -3).replace('|', '\\\\u007C')} end`,
    ],
  ])('redacts a credential %s, as one piece', (_, text) => {
    expect(reseller.text(text)).toBe('key [redacted] end')
  })

  it('leaves ordinary text alone and has nothing to withhold', () => {
    expect(reseller.text('Unauthorized: bad key (see docs/auth+keys)')).toBe(
      'Unauthorized: bad key (see docs/auth+keys)',
    )
    expect(reseller.withheld).toBeUndefined()
    expect(reseller.serverText('Bad key Ab/c+d=e&f')).toBe('Bad key [redacted]')
  })

  it(`withholds server text when a bare secret is under ${MIN_REDACTABLE_LENGTH} characters, still redacting its shaped forms`, () => {
    const short = createRedactor([
      { value: 'shop:ab', label: 'username:key', shaped: true },
      { value: 'ab', label: 'the API key' },
    ])
    expect(short.withheld).toBe(
      "the service's text is withheld, not shown: the API key is shorter than 8 characters, too short to redact from it safely",
    )
    expect(short.serverText('Bad key ab')).toBe('')
    // The bare "ab" is not redacted from local text: that would mangle "table" and "about".
    expect(short.text('table about shop:ab')).toBe('table about [redacted]')
  })

  it('copies an error chain with the credentials redacted, the built-in class kept and other fields dropped', () => {
    const inner = Object.assign(new Error(`parse failed near ${KEY}`), { code: 'HPE_X', data: `\x01 ${KEY}` })
    const outer = new TypeError('fetch failed', { cause: inner })
    const copy = reseller.error(outer) as TypeError & { cause: Error & Record<string, unknown> }
    expect(copy).toBeInstanceOf(TypeError)
    expect(copy.message).toBe('fetch failed')
    expect(copy.cause.message).toBe('parse failed near [redacted]')
    expect(copy.cause.code).toBe('HPE_X')
    expect(copy.cause).not.toHaveProperty('data')
    expect(inspect(copy, { depth: 10 })).not.toContain('Ab/c')
  })
})

describe('redactSecretFields', () => {
  const SECRET = 'whsec_0123456789abcdef'

  it.each([
    [
      'nested in arrays, whatever the type',
      { data: [{ id: 'a', signature_secret: SECRET, inner: { token: ['t1', { v: 't2' }] }, api_key: 12345678 }] },
      { data: [{ id: 'a', signature_secret: '[redacted]', inner: { token: '[redacted]' }, api_key: '[redacted]' }] },
    ],
    [
      'echoed in another field',
      { signature_secret: SECRET, message: `secret ${SECRET} is set` },
      { signature_secret: '[redacted]', message: 'secret [redacted] is set' },
    ],
    [
      'in JSON text held in a string',
      { message: JSON.stringify({ signature_secret: SECRET }) },
      { message: '{"signature_secret":"[redacted]"}' },
    ],
    ['with null, which is no secret', { token: null, client_secret: false }, { token: null, client_secret: false }],
  ])('redacts credential fields of JSON %s', (_, body, expected) => {
    expect(JSON.parse(redactSecretFields(JSON.stringify(body)))).toEqual(expected)
  })

  it('reads field names written with JSON escapes', () => {
    expect(redactSecretFields(`{"signature\\u005fsecret":"${SECRET}"}`)).toBe('{"signature_secret":"[redacted]"}')
  })

  it.each([
    ['cut-off JSON', `{"data":[{"signature_secret":"${SECRET}`, '{"data":[{"signature_secret":"[redacted]'],
    ['cut-off JSON with an object value', `{"token": {"a": "b}c", "d": [`, '{"token": [redacted]'],
    ['a form', `token=${SECRET}&expires=1`, 'token=[redacted]&expires=1'],
    ['key: value lines', `error: bad\nSignature-Secret: ${SECRET}\n`, 'error: bad\nSignature-Secret: [redacted]\n'],
    ['escaped JSON', `"{\\"token\\":\\"${SECRET}\\"}`, '"{\\"token\\":\\"[redacted]\\"}'],
    ['XML', `<r><token>${SECRET}</token></r>`, '<r><token>[redacted]</token></r>'],
    ['an echo of a value found', `token=${SECRET} (was ${SECRET})`, 'token=[redacted] (was [redacted])'],
  ])('redacts credential fields of %s, keeping the text around them', (_, text, expected) => {
    expect(redactSecretFields(text)).toBe(expected)
  })

  it('leaves text without credential fields as it is, byte for byte', () => {
    for (const text of ['{ "id": "whs_1",  "url": "https://x" }', 'key=value', '<html>maintenance</html>', '']) {
      expect(redactSecretFields(text)).toBe(text)
    }
  })
})

describe('createRedactor, other forms of a credential', () => {
  const secret = KEY.split('|')[1]!
  const long = createRedactor([{ value: '77|Zq8vN2kLmP4xRt7sWy', label: 'the reseller key', shaped: true }])

  it.each([
    ['upper-cased', `key ${KEY.toUpperCase()} end`],
    ['lower-cased', `key ${KEY.toLowerCase()} end`],
    ['base64-encoded', `key ${btoa(KEY)} end`],
    [
      'base64url-encoded without padding',
      `key ${btoa(secret).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')} end`,
    ],
  ])('redacts a credential %s', (_, text) => {
    expect(reseller.text(text)).toBe('key [redacted] end')
  })

  it('redacts a credential inside a longer base64 text, at each byte offset', () => {
    for (const before of ['reseller ', 'reseller  ', 'reseller   ']) {
      const encoded = btoa(`${before}${KEY}`)
      const redacted = reseller.text(encoded)
      expect(redacted).toContain('[redacted]')
      // What is left around the marker holds at most the bits of one character at each end.
      expect(redacted.replace('[redacted]', '').length).toBeLessThanOrEqual(btoa(before).length + 4)
    }
  })

  it('redacts a prefix of 16 characters or more, and leaves a shorter one', () => {
    const key = '77|Zq8vN2kLmP4xRt7sWy'
    expect(long.text(`cut ${key.slice(0, 16)}… and ${key.slice(0, 19)}…`)).toBe('cut [redacted]… and [redacted]…')
    expect(long.text(`short ${key.slice(0, 15)}…`)).toBe(`short ${key.slice(0, 15)}…`)
  })
})
