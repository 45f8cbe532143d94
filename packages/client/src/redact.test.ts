import { inspect } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createRedactor, MIN_REDACTABLE_LENGTH } from './redact.js'

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
