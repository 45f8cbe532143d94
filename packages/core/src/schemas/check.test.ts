// Property: for every built-in schema and a few user-style ones, the compiled check accepts exactly the JSON values
// valibot accepts, and the value it filled in place deep-equals valibot's output.
import { sampleEvent, sampleEventTypes } from '@payhooks/testing'
import fc from 'fast-check'
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { createWebhooks } from '../receiver/create.js'
import { sign } from '../verify/signature.js'
import { buildCheck, type CheckBuilder, compileCheck } from './check.js'
import { eventSchemas } from './events.js'

type Json = string | number | boolean | null | Json[] | { [key: string]: Json }
type Schema = v.GenericSchema

const refundSchema = v.looseObject({
  event_type: v.literal('refund_created'),
  event_id: v.pipe(v.string(), v.minLength(5), v.regex(/^evt_/), v.brand('EventId')),
  amount: v.pipe(v.number(), v.integer(), v.minValue(0)),
  currency: v.optional(v.picklist(['USD', 'CAD']), 'USD'),
  note: v.nullish(v.string(), 'none'),
  reason: v.exactOptional(v.string(), 'unknown'),
  live: v.optional(v.boolean()),
  voided: v.nullable(v.null(), null),
  meta: v.optional(
    v.looseObject({
      source: v.optional(v.pipe(v.string(), v.title('source')), 'api'),
      level: v.nullish(
        v.pipe(
          v.number(),
          v.check((n) => n < 10),
        ),
        0,
      ),
    }),
  ),
})
const refundSample = {
  event_type: 'refund_created',
  event_id: 'evt_r1',
  amount: 120,
  voided: null,
  meta: { source: 'dashboard' },
}

/** Entry keys that plain objects or arrays inherit, where valibot's `key in input` sees more than own keys. */
const trickySchema = v.looseObject({
  event_type: v.string(),
  event_id: v.string(),
  constructor: v.unknown(),
  nested: v.optional(v.looseObject({ length: v.optional(v.number()), 0: v.optional(v.string(), 'zero') })),
})
const trickySample = { event_type: 'tricky', event_id: 'evt_t1', nested: { length: 2 } }

const cases: { name: string; schema: Schema; samples: Json[] }[] = [
  ...sampleEventTypes.map((type) => ({
    name: type,
    schema: eventSchemas[type] as Schema,
    samples: [sampleEvent(type) as Json],
  })),
  { name: 'user schema with defaults and pipes', schema: refundSchema, samples: [refundSample] },
  { name: 'user schema with inherited keys', schema: trickySchema, samples: [trickySample] },
]

/** Every path of an object entry in `schema` (through wrappers and pipes), so mutations reach each field. */
function schemaPaths(schema: unknown, prefix: string[] = []): string[][] {
  const node = schema as { entries?: Record<string, unknown>; wrapped?: unknown }
  if (node.wrapped) return schemaPaths(node.wrapped, prefix)
  if (!node.entries) return []
  return Object.entries(node.entries).flatMap(([key, entry]) => [
    [...prefix, key],
    ...schemaPaths(entry, [...prefix, key]),
  ])
}

function setAt(target: Json, path: readonly string[], value: Json | undefined): void {
  let node = target
  for (const key of path.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return
    node = (node as Record<string, Json>)[key] as Json
  }
  const last = path[path.length - 1] as string
  if (typeof node !== 'object' || node === null || (Array.isArray(node) && last === 'length')) return
  if (value === undefined) Reflect.deleteProperty(node, last)
  else Reflect.defineProperty(node, last, { value, enumerable: true, writable: true, configurable: true })
}

/** JSON with sorted keys: own keys only, `__proto__` and `constructor` included, whatever their values. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_, node) =>
    node && typeof node === 'object' && !Array.isArray(node)
      ? Object.keys(node)
          .sort()
          .map((key) => [key, node[key]])
      : node,
  )
}

const leaf: fc.Arbitrary<Json> = fc.oneof(
  fc.string({ maxLength: 4 }),
  fc.constantFrom('', 'evt_', 'evt_x1', 'USD', 'EUR', 'transaction_settled', 'refund_created'),
  fc.integer({ min: -5, max: 20 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(0.5, -1, 12.5, 1e21),
  fc.boolean(),
  fc.constant(null),
)
const json: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'length', '0', 'source', 'last4', '__proto__', 'constructor'), tie('value'), {
      maxKeys: 3,
    }),
  ),
})).value

function mutations(paths: string[][]) {
  const path = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...paths) },
    fc
      .tuple(fc.constantFrom([], ...paths), fc.constantFrom('extra', '__proto__', 'prototype', 'constructor', 'x'))
      .map(([parent, key]) => [...parent, key]),
  )
  return fc.array(fc.tuple(path, fc.option(json, { nil: undefined, freq: 3 })), { maxLength: 4 })
}

describe.each<CheckBuilder>(['generated', 'closures'])('compileCheck, %s', (builder) => {
  for (const { name, schema, samples } of cases) {
    it(`agrees with v.safeParse on mutated ${name} events`, () => {
      const check = buildCheck(schema, builder)
      expect(check).toBeTypeOf('function')
      const paths = schemaPaths(schema)
      let accepted = 0
      fc.assert(
        fc.property(fc.constantFrom(...samples), mutations(paths), (sample, changes) => {
          const event = structuredClone(sample)
          for (const [path, value] of changes) setAt(event, path, value)
          const text = JSON.stringify(event)
          const checked = JSON.parse(text)
          const result = v.safeParse(schema, JSON.parse(text))
          expect(check?.(checked)).toBe(result.success)
          if (result.success) {
            accepted++
            expect(canonical(checked)).toBe(canonical(result.output))
          }
        }),
        { numRuns: 400 },
      )
      expect(accepted).toBeGreaterThan(20)
    })
  }

  it('fills defaults into the value itself', () => {
    const check = buildCheck(refundSchema, builder)
    const event: Record<string, unknown> = { ...refundSample, meta: {} }
    const meta = event.meta
    expect(check?.(event)).toBe(true)
    expect(event).toMatchObject({ currency: 'USD', note: 'none', reason: 'unknown', meta: { source: 'api', level: 0 } })
    expect(event.meta).toBe(meta)
    expect('live' in event).toBe(false)
  })

  it.each<[string, Schema]>([
    [
      'a transform',
      v.pipe(
        v.string(),
        v.transform((s) => s.trim()),
      ),
    ],
    ['v.object (it strips unknown keys)', v.object({ a: v.string() })],
    ['v.strictObject', v.strictObject({ a: v.string() })],
    ['a union', v.union([v.string(), v.number()])],
    ['an array', v.array(v.string())],
    ['a nested unsupported entry', v.looseObject({ data: v.looseObject({ at: v.pipe(v.string(), v.toDate()) }) })],
    ['a fallback', v.fallback(v.string(), 'x')],
    ['a function default', v.looseObject({ a: v.optional(v.string(), () => 'x') })],
    ['an object default', v.looseObject({ a: v.optional(v.looseObject({}), {}) })],
    ['an async schema', v.looseObjectAsync({ a: v.string() }) as unknown as Schema],
  ])('leaves %s to v.safeParse', (_, schema) => {
    expect(buildCheck(schema, builder)).toBeUndefined()
  })
})

describe('compileCheck', () => {
  it('compiles each schema once', () => {
    expect(compileCheck(refundSchema)).toBe(compileCheck(refundSchema))
  })

  it('generates code on Node, and writes no schema value into it: a literal or key with quotes stays data', () => {
    const evil = "'); throw new Error('injected'); ('"
    const schema = v.looseObject({ [evil]: v.optional(v.literal(evil), evil), kind: v.picklist([evil, 'b']) })
    const generated = buildCheck(schema, 'generated')
    expect(generated).toBeTypeOf('function')
    const event: Record<string, unknown> = { kind: evil }
    expect(generated?.(event)).toBe(true)
    expect(event[evil]).toBe(evil)
    expect(generated?.({ kind: 'c' })).toBe(false)
  })
})

describe('receive() with user schemas', () => {
  const secret = 'whsec_schema_check'

  async function deliver(webhooks: { receive: ReturnType<typeof createWebhooks>['receive'] }, event: unknown) {
    const body = JSON.stringify(event)
    const signature = await sign(secret, body)
    return webhooks.receive({
      method: 'POST',
      body,
      getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined),
    })
  }

  it('gives handlers the output of a schema with transforms', async () => {
    const schemas = {
      payment_created: v.object({
        event_type: v.literal('payment_created'),
        event_id: v.string(),
        data: v.looseObject({ amount: v.pipe(v.string(), v.transform(Number)) }),
      }),
    }
    const seen: unknown[] = []
    const webhooks = createWebhooks({ secret, schemas })
    webhooks.on('payment_created', (event) => {
      seen.push(event)
    })
    const event = { event_type: 'payment_created', event_id: 'p1', extra: 1, data: { amount: '12.5' } }
    expect((await deliver(webhooks, event)).status).toBe(200)
    expect(seen).toStrictEqual([{ event_type: 'payment_created', event_id: 'p1', data: { amount: 12.5 } }])
  })

  it('gives handlers the defaults of a compiled schema and refuses what it refuses', async () => {
    const seen: unknown[] = []
    const webhooks = createWebhooks({ secret, schemas: { refund_created: refundSchema } })
    webhooks.on('refund_created', (event) => {
      seen.push(event)
    })
    expect((await deliver(webhooks, refundSample)).status).toBe(200)
    expect((await deliver(webhooks, { ...refundSample, event_id: 'evt_r2', amount: 1.5 })).status).toBe(422)
    expect(seen).toStrictEqual([v.parse(refundSchema, refundSample)])
    expect(seen[0]).toMatchObject({ currency: 'USD', note: 'none', reason: 'unknown' })
  })
})
