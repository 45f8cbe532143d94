// Property: whatever arrives (signed events mutated before or after signing, bytes, headers, methods of any kind),
// receive() answers one of the documented statuses with one line of JSON, never 500, and handlers run only for a
// 2XX that says the event was processed.
import { sampleEvent, sampleEventTypes } from '@payhooks/testing'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseCreatedAt } from '../time/parse.js'
import type { RawBody } from '../verify/signature.js'
import { sign } from '../verify/signature.js'
import { createWebhooks } from './create.js'

const secret = 'whsec_property_test'
/**
 * The statuses of docs/guide/errors.md's "Every answer" table, less 408 (only a transport's body can be late), 409
 * (concurrency) and 500 (a failing handler or secret resolver: these never fail).
 */
const DOCUMENTED = [200, 400, 401, 405, 413, 422, 503]
const HOUR = 60 * 60 * 1000

type Json = string | number | boolean | null | Json[] | { [key: string]: Json }

/** Sets (or, for `undefined`, deletes) the own property at `path`, making objects on the way (`__proto__` too). */
function setAt(target: Record<string, unknown>, path: readonly string[], value: unknown): void {
  const own = (node: Record<string, unknown>, key: string, next: unknown) =>
    Object.defineProperty(node, key, { value: next, enumerable: true, writable: true, configurable: true })
  let node = target
  for (const key of path.slice(0, -1)) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined
    if (typeof next !== 'object' || next === null) own(node, key, {})
    node = node[key] as Record<string, unknown>
  }
  const last = path[path.length - 1] ?? 'event_id'
  if (value === undefined) delete node[last]
  else own(node, last, value)
}

const fieldPath = fc.oneof(
  fc.constantFrom(
    ['event_id'],
    ['event_type'],
    ['created_at'],
    ['merchant_id'],
    ['data'],
    ['data', 'settlement_amount'],
    ['data', 'transaction_id'],
    ['client_id'],
    ['__proto__'],
    ['constructor'],
  ),
  fc.array(fc.string({ maxLength: 8 }), { minLength: 1, maxLength: 3 }),
)
// created_at of any age, in the past or the future, and strings that are almost dates
const timestamp = fc.oneof(
  fc.integer({ min: -200 * HOUR, max: 200 * HOUR }).map((ageMs) => new Date(Date.now() - ageMs).toISOString()),
  fc.constantFrom('2026-13-45T99:99:99Z', '', 'now', '0', '1970-01-01T00:00:00Z', '+275760-09-13T00:00:00.000Z'),
)
const fieldValue = fc.oneof(fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<Json>, fc.constant(undefined), timestamp)
const fieldEdit = fc.oneof(
  fc.record({ path: fc.constant(['created_at']), value: timestamp }),
  fc.record({ path: fieldPath, value: fieldValue }),
)

/** A sample event of any type (and one without a schema), with a fresh id. */
const event = fc
  .record({ type: fc.constantFrom(...sampleEventTypes, 'payment_created', 'made_up_type'), id: fc.uuid() })
  .map(({ type, id }) => sampleEvent(type, { eventId: `evt_${id}` }))

const byteEdit = fc.record({
  at: fc.nat(),
  byte: fc.integer({ min: 0, max: 255 }),
  op: fc.constantFrom('flip', 'insert', 'delete', 'truncate'),
})

function editBytes(bytes: Uint8Array, edits: { at: number; byte: number; op: string }[]): Uint8Array {
  let out = Array.from(bytes)
  for (const { at, byte, op } of edits) {
    const i = out.length === 0 ? 0 : at % out.length
    if (op === 'flip') out[i] = byte
    else if (op === 'insert') out.splice(i, 0, byte)
    else if (op === 'delete') out.splice(i, 1)
    else out = out.slice(0, i)
  }
  return Uint8Array.from(out)
}

/** What reaches receive(): a body, a method, and the headers, built from a signed event and mutations. */
const delivery = fc.oneof(
  // Mutated after signing: the signature no longer matches (unless the edits cancel out).
  fc
    .record({ event, edits: fc.array(byteEdit, { maxLength: 4 }), asString: fc.boolean() })
    .map(({ event, edits, asString }) => ({ event, mutate: 'bytes' as const, edits, asString, fields: [] })),
  // Mutated before signing: correctly signed, but not what the schemas (or the clock) accept.
  fc
    .record({
      event,
      fields: fc.array(fieldEdit, { minLength: 1, maxLength: 3 }),
      asString: fc.boolean(),
    })
    .map(({ event, fields, asString }) => ({ event, mutate: 'fields' as const, edits: [], asString, fields })),
  // Signed and untouched.
  event.map((event) => ({ event, mutate: 'none' as const, edits: [], asString: false, fields: [] })),
  // Signed bytes that are no event at all, some over the size limit.
  fc
    .record({
      event,
      raw: fc.oneof(
        fc.uint8Array({ maxLength: 64 }),
        fc.uint8Array({ minLength: 1500, maxLength: 4000 }),
        fc.string({ unit: 'binary', maxLength: 200 }).map((text) => new TextEncoder().encode(text)),
        (fc.jsonValue({ maxDepth: 4 }) as fc.Arbitrary<Json>).map((value) =>
          new TextEncoder().encode(JSON.stringify(value)),
        ),
      ),
      asString: fc.boolean(),
    })
    .map(({ event, raw, asString }) => ({ event, mutate: 'raw' as const, raw, edits: [], asString, fields: [] })),
)

// Mostly the real signature and no method (as adapters that routed on it pass), so most runs get past the checks.
const headersArb = fc.record({
  signature: fc.oneof(
    { arbitrary: fc.constant('signed'), weight: 12 },
    fc.constant(undefined),
    fc.stringMatching(/^[0-9A-Fa-f]{64}$/),
    fc.string({ maxLength: 80 }),
  ),
  lowerCase: fc.boolean(),
  method: fc.oneof(
    { arbitrary: fc.constant(undefined), weight: 10 },
    { arbitrary: fc.constant('POST'), weight: 4 },
    fc.constantFrom('GET', 'PUT', 'DELETE', 'post', ''),
  ),
  others: fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.string({ maxLength: 40 }), { maxKeys: 4 }),
})

/** `created_at` as a time, when the message has one that reads as an ISO 8601 date (time.test.ts checks how). */
function createdAt(message: Record<string, unknown>): number | undefined {
  const value = message.created_at
  if (typeof value !== 'string') return undefined
  const time = parseCreatedAt(value)
  return Number.isNaN(time) ? undefined : time
}

describe('receive() under arbitrary input (property)', () => {
  it('answers a documented status in one line of JSON, never 500, and runs handlers only on 200 processed', async () => {
    // Each code is answered with one fixed sentence, whatever the input: nothing of it is echoed back.
    const sentences = new Map<string, string>()
    await fc.assert(
      fc.asyncProperty(delivery, headersArb, fc.boolean(), async (input, head, asyncSecret) => {
        const runs: string[] = []
        const webhooks = createWebhooks({
          secret: asyncSecret ? async () => [secret] : secret,
          maxBodyBytes: 2048,
          logger: { error() {} },
        })
        webhooks.onAny((e) => void runs.push(e.event_id))

        const message = structuredClone(input.event)
        for (const { path, value } of input.fields) setAt(message, path, value)
        let bytes: Uint8Array = 'raw' in input ? input.raw : new TextEncoder().encode(JSON.stringify(message))
        const signature = await sign(secret, bytes)
        bytes = editBytes(bytes, input.edits)
        const body: RawBody = input.asString ? new TextDecoder().decode(bytes) : bytes
        const sent = head.signature === 'signed' ? signature : head.signature
        const headers: Record<string, string> = { ...head.others }
        if (sent !== undefined) headers['service-hmac-sha256'] = head.lowerCase ? sent.toLowerCase() : sent

        const answer = await webhooks.receive({
          method: head.method,
          body,
          getHeader: (name) => headers[name],
        })

        expect(DOCUMENTED).toContain(answer.status)
        expect(answer.body).not.toContain('\n')
        const json = JSON.parse(answer.body) as { ok?: boolean; status?: string; error?: string }
        if (answer.status === 200) expect(json.ok).toBe(true)
        else expect(typeof json.error).toBe('string')
        if (json.error) {
          const message = (json as { message: string }).message
          expect(message).toBe(sentences.get(json.error) ?? message)
          sentences.set(json.error, message)
        }
        if (runs.length > 0) {
          expect(answer.status).toBe(200)
          expect(json.status).toBe('processed')
          expect(runs).toHaveLength(1)
          // Never an event older than maxEventAgeMs (73 hours) or more than 5 minutes ahead: a replay, or a clock off.
          const time = createdAt(message)
          if (time !== undefined) {
            expect(Date.now() - time).toBeLessThanOrEqual(73 * HOUR)
            expect(time - Date.now()).toBeLessThanOrEqual(5 * 60_000)
          }
        }
        if (json.status === 'processed') expect(runs).toHaveLength(1)
      }),
      { numRuns: 400 },
    )
  })
})
