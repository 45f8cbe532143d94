// Ids made of bytes that are not text, on every store payhooks ships: bodies that are not UTF-8, lone surrogates,
// control characters. Each would collide with another id, fail the store on every try, or split a log line.
import { randomUUID } from 'node:crypto'
import { createWebhooks, memoryStore, type WebhookError, type WebhookStore } from '@payhooks/core'
import { postgresStore } from '@payhooks/postgres'
import { redisStore } from '@payhooks/redis'
import { Redis } from 'ioredis'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { signedWithRawId } from '../fixtures/hostile.js'
import { databaseUrl } from '../fixtures/postgres.js'
import { UNHURRIED } from '../fixtures/redis-timeouts.js'

const REDIS_URL = process.env.REDIS_URL
if (!REDIS_URL) throw new Error('REDIS_URL is not set: run these tests with `node scripts/test.mjs hostile-ids`')
const secret = 'whsec_hostile_ids'
const keyPrefix = `payhooks-hostile-ids:${randomUUID()}:`
const redis = new Redis(REDIS_URL)
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 4 })
const table = `hostile_ids_${randomUUID().replaceAll('-', '').slice(0, 12)}`

afterAll(async () => {
  const keys = await redis.keys(`${keyPrefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
  await pool.query(`DROP TABLE IF EXISTS ${table}`)
  await pool.end()
})

const stores: [string, () => WebhookStore][] = [
  ['memoryStore', () => memoryStore()],
  ['redisStore', () => redisStore(redis, { keyPrefix: `${keyPrefix}${randomUUID()}:`, ...UNHURRIED })],
  ['postgresStore', () => postgresStore(pool, { table })],
]

function receiver(store: WebhookStore) {
  const errors: WebhookError[] = []
  const runs: string[] = []
  const webhooks = createWebhooks({ secret, store })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => void runs.push(event.event_id))
  const receive = async (id: string | Uint8Array, type?: string) => {
    const answer = await webhooks.receive(await signedWithRawId(secret, id, type))
    return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> }
  }
  return { receive, errors, runs }
}

const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(parts.flatMap((part) => (typeof part === 'string' ? [...Buffer.from(part)] : part)))

const isControl = (char: string) => {
  const code = char.charCodeAt(0)
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029
}

const unique = () => `evt_${randomUUID()}_`

describe.each(stores)('%s', (_, makeStore) => {
  it('refuses two bodies differing only in a byte that is not UTF-8 with 400 invalid_encoding, neither a duplicate of the other', async () => {
    const { receive, errors, runs } = receiver(makeStore())
    const id = unique()
    const refused = { status: 400, body: { error: 'invalid_encoding', message: 'body is not valid UTF-8' } }

    expect(await receive(bytes(id, [0xff]))).toEqual(refused)
    expect(await receive(bytes(id, [0xfe]))).toEqual(refused)
    expect(await receive(bytes(id, [0xc3]))).toEqual(refused) // a sequence cut short
    expect(runs).toEqual([])
    expect(errors.map((e) => [e.code, e.status])).toEqual(Array(3).fill(['invalid_encoding', 400]))

    // U+FFFD sent as valid UTF-8 is text like any other.
    expect((await receive(`${id}\uFFFD`)).body.status).toBe('processed')
    expect(runs).toEqual([`${id}\uFFFD`])
  })

  it('refuses ids with lone surrogates with 400 invalid_id, each, and keeps a surrogate pair', async () => {
    const { receive, errors, runs } = receiver(makeStore())
    const id = unique()
    const refused = {
      status: 400,
      body: {
        error: 'invalid_id',
        message: 'event_id and event_type must not hold control characters or lone surrogates',
      },
    }

    expect(await receive(`${id}\\ud800`)).toEqual(refused)
    expect(await receive(`${id}\\ud801`)).toEqual(refused)
    expect(await receive(`${id}\\udc00x`)).toEqual(refused)
    expect(runs).toEqual([])
    expect(errors.map((e) => e.eventId)).toEqual([`${id}\\ud800`, `${id}\\ud801`, `${id}\\udc00x`])

    expect((await receive(`${id}\\ud83d\\ude00`)).body.status).toBe('processed')
    expect((await receive(`${id}\\ud83d\\ude00`)).body.status).toBe('duplicate')
    expect(runs).toEqual([`${id}😀`])
  })

  it('refuses a NUL in an event_id with 400 invalid_id on every try, never 503', async () => {
    const { receive, errors, runs } = receiver(makeStore())
    const id = `${unique()}\\u0000x`
    for (let attempt = 0; attempt < 3; attempt++) expect((await receive(id)).status).toBe(400)
    expect(runs).toEqual([])
    expect(errors.map((e) => e.code)).toEqual(Array(3).fill('invalid_id'))
  })
})

describe('control characters in event_id or event_type', () => {
  it('are refused 400 invalid_id and written escaped, in onError messages and in the default log line', async () => {
    const { receive, errors, runs } = receiver(memoryStore())
    const cases: [string, string][] = [
      ['evt_1\\r\\nINFO forged line', 'my_event'],
      ['evt_2', 'my_event\\n[payhooks] 200 forged'],
      ['evt_3\\u0000', 'my_event'],
      ['evt_4\\u2028x', 'my_event\\u0085'],
    ]
    for (const [id, type] of cases) expect((await receive(id, type)).status).toBe(400)
    expect(runs).toEqual([])
    for (const error of errors) {
      expect(error.code).toBe('invalid_id')
      for (const text of [error.message, error.eventId ?? '', error.eventType ?? '']) {
        expect([...text].filter(isControl), text).toEqual([])
      }
    }
    expect(errors[0]?.message).toBe(
      'event_id "evt_1\\r\\nINFO forged line" or event_type "my_event" holds a control character or a lone surrogate',
    )

    const lines: string[] = []
    const logged = createWebhooks({ secret, logger: { error: (line) => lines.push(line) } })
    const { body, getHeader } = await signedWithRawId(secret, 'evt_5\\r\\n[payhooks] 200 forged')
    expect((await logged.receive({ body, getHeader })).status).toBe(400)
    expect(lines).toEqual([
      '[payhooks] 400 invalid_id: event_id "evt_5\\r\\n[payhooks] 200 forged" or event_type "my_event" holds a control character or a lone surrogate',
    ])
  })
})
