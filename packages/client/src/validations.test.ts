import { describe, expect, it } from 'vitest'
import { type ClientOptions, createClient } from './index.js'

const baseUrl = 'http://127.0.0.1:1'
const reseller = { resellerKey: '12|AbCdEfGhIj' }
const merchant = { username: 'shop', apiKey: 'key-123' }

/** The thrown error's class and exact message. */
function thrown(fn: () => unknown): [string, string] {
  try {
    fn()
  } catch (error) {
    return [(error as Error).constructor.name, (error as Error).message]
  }
  throw new Error('nothing thrown')
}

async function rejected(promise: Promise<unknown>): Promise<[string, string]> {
  const error = (await promise.then(
    () => new Error('resolved'),
    (e: unknown) => e,
  )) as Error
  return [error.constructor.name, error.message]
}

const create = (options: Partial<ClientOptions>) => () => createClient({ baseUrl, auth: merchant, ...options })
const timeoutMessage = 'timeoutMs must be a number of milliseconds above 0 and at most 2147483647'
const merchantMessage = 'merchant id must be a positive integer (the numeric merchant id)'

describe('createClient option checks', () => {
  it('refuses missing options', () => {
    expect(thrown(() => createClient(undefined as unknown as ClientOptions))).toEqual([
      'TypeError',
      'createClient: options are required',
    ])
  })

  it.each([
    ['not a url', 'createClient: baseUrl must be an absolute http(s) URL'],
    ['ftp://x', 'createClient: baseUrl must be an http(s) URL'],
    ['http://u:p@x', 'createClient: baseUrl must not carry credentials; use auth'],
    ['http://x/?a=1', 'createClient: baseUrl must not have a query or a fragment'],
    ['http://x/#top', 'createClient: baseUrl must not have a query or a fragment'],
  ])('refuses baseUrl %s', (value, message) => {
    expect(thrown(create({ baseUrl: value }))).toEqual(['TypeError', message])
  })

  it.each([
    [null, 'createClient: auth must be { resellerKey } or { username, apiKey }'],
    [{ ...reseller, ...merchant }, 'createClient: auth takes either { resellerKey } or { username, apiKey }, not both'],
    [
      { resellerKey: 'nopipe' },
      'createClient: auth.resellerKey must be digits, a "|", then a string without spaces (like 12|AbC…); the value given (6 characters, not shown) is not',
    ],
    [
      { resellerKey: 12 },
      'createClient: auth.resellerKey must be digits, a "|", then a string without spaces (like 12|AbC…); the value given (a number) is not',
    ],
    [
      { username: 'a:b', apiKey: 'k' },
      'createClient: auth.username must be a non-empty string of visible ASCII characters without ":" or spaces',
    ],
    [
      { username: 'shop', apiKey: 'has space' },
      'createClient: auth.apiKey must be a non-empty string of visible ASCII characters, no spaces',
    ],
  ])('refuses auth %j', (auth, message) => {
    expect(thrown(create({ auth: auth as ClientOptions['auth'] }))).toEqual(['TypeError', message])
  })

  it.each([0, -1, 2_147_483_648, Number.NaN, '5'])('refuses timeoutMs %s', (timeoutMs) => {
    expect(thrown(create({ timeoutMs: timeoutMs as number }))).toEqual([
      'RangeError',
      `createClient: ${timeoutMessage}`,
    ])
  })

  it('refuses a fetch that is not a function', () => {
    expect(thrown(create({ fetch: 'no' as unknown as typeof fetch }))).toEqual([
      'TypeError',
      'createClient: fetch must be a function',
    ])
  })

  it.each([0, 1.5, 'abc', '-1', Number.MAX_SAFE_INTEGER + 1])('refuses merchantId %s', (merchantId) => {
    expect(thrown(create({ merchantId }))).toEqual(['TypeError', `createClient: ${merchantMessage}`])
  })

  it('checks in a fixed order: baseUrl, auth, timeoutMs, fetch, merchantId', () => {
    const bad = { timeoutMs: 0, fetch: 1 as unknown as typeof fetch, merchantId: 'x' }
    expect(thrown(create({ ...bad, baseUrl: 'ftp://x', auth: null as unknown as ClientOptions['auth'] }))[1]).toMatch(
      /^createClient: baseUrl/,
    )
    expect(thrown(create({ ...bad, auth: null as unknown as ClientOptions['auth'] }))[1]).toMatch(/^createClient: auth/)
    expect(thrown(create(bad))[1]).toMatch(/^createClient: timeoutMs/)
    expect(thrown(create({ ...bad, timeoutMs: 1 }))[1]).toMatch(/^createClient: fetch/)
    expect(thrown(create({ ...bad, timeoutMs: 1, fetch: undefined }))[1]).toMatch(/^createClient: merchant id/)
  })

  it('reads a numeric string merchant id and trims trailing slashes from baseUrl', async () => {
    const seen: { url: string; merchant: string | null }[] = []
    const client = createClient({
      baseUrl: 'http://127.0.0.1:1/api//',
      auth: merchant,
      merchantId: '0042',
      fetch: async (url, init) => {
        seen.push({ url: String(url), merchant: new Headers(init?.headers).get('service-merchant-id') })
        return Response.json({ total_item_count: 0, data: [] })
      },
    })
    expect(client.merchantId).toBe(42)
    await client.subscriptions.list()
    expect(seen).toEqual([{ url: 'http://127.0.0.1:1/api/ps/webhook/subscriptions', merchant: '42' }])
  })
})

describe('per-call checks', () => {
  it('names the call in timeout and merchant id errors', async () => {
    const client = createClient({ baseUrl, auth: reseller })
    expect(await rejected(client.subscriptions.list({ timeoutMs: 0 }))).toEqual([
      'RangeError',
      `subscriptions.list: ${timeoutMessage}`,
    ])
    expect(thrown(() => client.forMerchant('x'))).toEqual(['TypeError', `forMerchant: ${merchantMessage}`])
    expect(await rejected(client.auth.clientToken({ merchantId: -3 }))).toEqual([
      'TypeError',
      `auth.clientToken: ${merchantMessage}`,
    ])
  })
})
