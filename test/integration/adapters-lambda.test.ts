// The adapters' scenario list (adapters.test.ts), run against the Lambda handler invoked with the events
// API Gateway (HTTP and REST APIs), function URLs and ALB send, plus what only Lambda has: base64 bodies,
// header spellings, and the answer's shape per source.
import { readdirSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import {
  createWebhooks,
  type LogFields,
  SIGNATURE_HEADER,
  sign,
  type TransactionSettledEvent,
  WebhookError,
} from '@payhooks/core'
import { type LambdaHttpResult, lambdaWebhooks } from '@payhooks/lambda'
import { sampleEvent, sampleEventTypes, signedDelivery } from '@payhooks/testing'
import type { ALBHandler, APIGatewayProxyHandler, APIGatewayProxyHandlerV2, LambdaFunctionURLHandler } from 'aws-lambda'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { deferred, SECRET, testWebhooks } from '../fixtures/apps.js'
import { type HttpRequestParts, lambdaEvent, lambdaEventKinds, resultHeader } from '../fixtures/lambda-events.js'

describe.each(lambdaEventKinds)('lambda adapter, $name events', ({ kind }) => {
  function start(options: Parameters<typeof testWebhooks>[0] = {}) {
    const { webhooks, errors } = testWebhooks(options)
    const handler = lambdaWebhooks(webhooks)
    const invoke = (parts: HttpRequestParts) => handler(lambdaEvent(kind, parts))
    const post = (body: string | Uint8Array, headers: Record<string, string>, base64?: boolean) =>
      invoke({ method: 'POST', headers, body, base64 })
    return { webhooks, errors, invoke, post }
  }
  const json = (result: LambdaHttpResult) => JSON.parse(result.body)

  it('hands a valid event, typed, to its handler and answers 200', async () => {
    const { webhooks, post } = start()
    const seen: TransactionSettledEvent[] = []
    webhooks.on('transaction_settled', (event) => {
      expectTypeOf(event.data.settlement_amount).toEqualTypeOf<number>()
      seen.push(event)
    })
    const event = sampleEvent('transaction_settled', { data: { settlement_amount: -5 } })
    const { body, headers } = await signedDelivery(event, SECRET)

    const res = await post(body, headers)

    expect(res.statusCode).toBe(200)
    expect(resultHeader(res, 'content-type')).toMatch(/^application\/json/)
    expect(json(res)).toEqual({ ok: true, event_id: event.event_id, status: 'processed' })
    expect(seen).toEqual([event])
  })

  it('routes every sample event type to its own handler', async () => {
    const { webhooks, post } = start()
    const seen: string[] = []
    for (const type of sampleEventTypes) webhooks.on(type, (event) => void seen.push(event.event_type))
    for (const type of sampleEventTypes) {
      const { body, headers } = await signedDelivery(sampleEvent(type), SECRET)
      expect((await post(body, headers)).statusCode).toBe(200)
    }
    expect(seen).toEqual(sampleEventTypes)
  })

  it('answers a duplicate delivery 200 without running the handler again', async () => {
    const { webhooks, post } = start()
    let runs = 0
    webhooks.on('transaction_settled', () => void runs++)
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, SECRET)

    expect(json(await post(body, headers)).status).toBe('processed')
    const again = await post(body, headers)

    expect(again.statusCode).toBe(200)
    expect(json(again)).toEqual({ ok: true, event_id: event.event_id, status: 'duplicate' })
    expect(runs).toBe(1)
  })

  it('answers 401 to a wrong or missing signature and runs nothing', async () => {
    const { webhooks, post, errors } = start()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const signedElsewhere = await signedDelivery(sampleEvent('transaction_settled'), 'whsec_someone_else')
    const wrong = await post(signedElsewhere.body, signedElsewhere.headers)
    const missing = await post(signedElsewhere.body, { 'content-type': 'application/json' })

    expect(wrong.statusCode).toBe(401)
    expect(json(wrong).error).toBe('invalid_signature')
    expect(missing.statusCode).toBe(401)
    expect(json(missing).error).toBe('missing_signature')
    expect(runs).toBe(0)
    expect(errors.map((e) => e.code)).toEqual(['invalid_signature', 'missing_signature'])
  })

  it("logs a wrong or missing signature with the client's address the event's source saw", async () => {
    const logged: LogFields[] = []
    const logger = { error() {}, warn: (fields: LogFields) => void logged.push(fields), info() {} }
    const handler = lambdaWebhooks(createWebhooks({ secret: SECRET, logger }))
    const signedElsewhere = await signedDelivery(sampleEvent('transaction_settled'), 'whsec_someone_else')
    const post = (headers: Record<string, string>) =>
      handler(lambdaEvent(kind, { method: 'POST', headers, body: signedElsewhere.body }))
    expect((await post(signedElsewhere.headers)).statusCode).toBe(401)
    expect((await post({ 'content-type': 'application/json' })).statusCode).toBe(401)
    // sourceIp of API Gateway and function URLs; behind an ALB, the address it appended to x-forwarded-for.
    const address = kind.startsWith('alb') ? '72.12.164.125' : '192.0.2.1'
    expect(logged.map((fields) => [fields.code, fields.source])).toEqual([
      ['invalid_signature', address],
      ['missing_signature', address],
    ])
  })

  it('answers 401 when one space is added to the signed body, plain or base64-encoded', async () => {
    const { webhooks, post } = start()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const tampered = body.replace('"settlement_amount":', '"settlement_amount": ')
    expect(tampered.length).toBe(body.length + 1)

    for (const base64 of [false, true]) {
      const res = await post(tampered, headers, base64)
      expect(res.statusCode).toBe(401)
      expect(json(res).error).toBe('invalid_signature')
    }
    expect(runs).toBe(0)
  })

  it('is answered 413, with core error body, when the body is over maxBodyBytes, plain or base64-encoded', async () => {
    const maxBodyBytes = 1024
    const { webhooks, post, errors } = start({ maxBodyBytes })
    let runs = 0
    webhooks.onAny(() => void runs++)
    const event = sampleEvent('transaction_settled', {
      data: { transaction_description: 'x'.repeat(2 * maxBodyBytes) },
    })
    const { body, headers } = await signedDelivery(event, SECRET)

    for (const base64 of [false, true]) {
      const res = await post(body, headers, base64)
      expect(res.statusCode).toBe(413)
      expect(json(res).error).toBe('payload_too_large')
    }
    expect(runs).toBe(0)
    expect(errors.map((e) => e.code)).toEqual(['payload_too_large', 'payload_too_large'])
  })

  it('counts a text body in bytes, not characters, against maxBodyBytes', async () => {
    const maxBodyBytes = 1024
    const { webhooks, post } = start({ maxBodyBytes })
    let runs = 0
    webhooks.onAny(() => void runs++)
    // 400 characters of three bytes each: under the limit in characters, over it in bytes.
    const event = sampleEvent('transaction_settled', { data: { transaction_description: '€'.repeat(400) } })
    const { body, headers } = await signedDelivery(event, SECRET)
    expect(body.length).toBeLessThan(maxBodyBytes)

    const res = await post(body, headers, false)

    expect(res.statusCode).toBe(413)
    expect(runs).toBe(0)
  })

  it('answers 405 to any method but POST, with Allow: POST, and runs nothing', async () => {
    const { webhooks, invoke } = start()
    let runs = 0
    webhooks.onAny(() => void runs++)
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const get = await invoke({ method: 'GET' })
    const put = await invoke({ method: 'PUT', headers, body })

    for (const res of [get, put]) {
      expect(res.statusCode).toBe(405)
      expect(resultHeader(res, 'allow')).toBe('POST')
      expect(json(res).error).toBe('method_not_allowed')
    }
    expect(runs).toBe(0)
  })

  it('answers 500 when a handler fails, then runs it again on redelivery and answers 200', async () => {
    const { webhooks, post, errors } = start()
    let runs = 0
    webhooks.on('transaction_settled', () => {
      runs++
      if (runs === 1) throw new Error('ledger offline')
    })
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const first = await post(body, headers)
    expect(first.statusCode).toBe(500)
    expect(json(first).error).toBe('handler_failed')
    expect(errors[0]?.message).toContain('ledger offline')

    const retry = await post(body, headers)
    expect(retry.statusCode).toBe(200)
    expect(json(retry).status).toBe('processed')
    expect(runs).toBe(2)
  })

  it('answers a retryable 503 by the deadline while the handler runs on, and dedupes the redelivery', async () => {
    const deadlineMs = 300
    const { webhooks, post, errors } = start({ deadlineMs })
    const release = deferred()
    const finished = deferred()
    let runs = 0
    webhooks.on('transaction_settled', async () => {
      runs++
      await release.promise
      finished.resolve()
    })
    const event = sampleEvent('transaction_settled')
    const { body, headers } = await signedDelivery(event, SECRET)

    const late = await post(body, headers)

    expect(late.statusCode).toBe(503)
    expect(resultHeader(late, 'retry-after')).toBeDefined()
    expect(json(late).error).toBe('deadline_exceeded')
    expect(errors[0]).toBeInstanceOf(WebhookError)

    release.resolve()
    await finished.promise
    await new Promise((resolve) => setImmediate(resolve))

    const redelivery = await post(body, headers)
    expect(redelivery.statusCode).toBe(200)
    expect(json(redelivery)).toEqual({ ok: true, event_id: event.event_id, status: 'duplicate' })
    expect(runs).toBe(1)
  })

  it('verifies the decoded bytes of a base64 body, and refuses ones that are not UTF-8', async () => {
    const { webhooks, post } = start()
    const seen: string[] = []
    webhooks.onAny((event) => void seen.push(event.event_id))
    const event = sampleEvent('transaction_settled')
    const text = JSON.stringify(event).replace('"data":{', '"data":{"note":"caf\u00e9",')
    // UTF-8 "é" (0xC3 0xA9): a receiver that decoded these bytes as latin-1 text and encoded them again
    // would verify other bytes, so only one that verifies the decoded bytes themselves answers 200.
    const utf8 = Buffer.from(text, 'utf8')
    expect(Buffer.from(utf8.toString('latin1'), 'utf8').equals(utf8)).toBe(false)
    const signed = { 'content-type': 'application/json', [SIGNATURE_HEADER]: await sign(SECRET, utf8) }
    expect((await post(utf8, signed, true)).statusCode).toBe(200)
    expect(seen).toEqual([event.event_id])

    // A latin-1 "é" (0xE9) is not UTF-8: validly signed or not, such a body is refused and runs nothing.
    const other = sampleEvent('transaction_settled')
    const latin1 = Buffer.from(JSON.stringify(other).replace('"data":{', '"data":{"note":"caf\u00e9",'), 'latin1')
    const headers = { 'content-type': 'application/json', [SIGNATURE_HEADER]: await sign(SECRET, latin1) }
    const res = await post(latin1, headers, true)
    expect(res.statusCode).toBe(400)
    expect(json(res)).toMatchObject({ error: 'invalid_encoding' })
    expect(seen).toEqual([event.event_id])
  })

  it('finds the signature header whatever its spelling', async () => {
    const { post } = start()
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)
    const signature = headers['service-hmac-sha256'] as string

    const res = await post(body, { 'Content-Type': 'application/json', 'Service-HMAC-SHA256': signature })

    expect(res.statusCode).toBe(200)
  })

  it('answers in the shape the source expects', async () => {
    const { post } = start()
    const { body, headers } = await signedDelivery(sampleEvent('transaction_settled'), SECRET)

    const res = await post(body, headers)

    if (kind === 'alb' || kind === 'alb-multi-value') {
      // ALB requires the status description ("code reason") and the base64 flag in every response,
      // and multiValueHeaders instead of headers when the target group has multi-value headers on.
      expect(res.statusDescription).toBe('200 OK')
      expect(res.isBase64Encoded).toBe(false)
      if (kind === 'alb') expect(res.headers).toEqual({ 'content-type': 'application/json' })
      else expect(res.multiValueHeaders).toEqual({ 'content-type': ['application/json'] })
      expect(kind === 'alb' ? res.multiValueHeaders : res.headers).toBeUndefined()
    } else {
      expect(Object.keys(res).sort()).toEqual(['body', 'headers', 'statusCode'])
      expect(res.headers).toEqual({ 'content-type': 'application/json' })
    }
  })
})

describe('lambda adapter types', () => {
  it("fits @types/aws-lambda's handler types for all four sources", () => {
    const { webhooks } = testWebhooks()
    const handler = lambdaWebhooks(webhooks)
    expectTypeOf(handler).toExtend<APIGatewayProxyHandlerV2>()
    expectTypeOf(handler).toExtend<LambdaFunctionURLHandler>()
    expectTypeOf(handler).toExtend<APIGatewayProxyHandler>()
    expectTypeOf(handler).toExtend<ALBHandler>()
  })

  it('publishes declarations that need nothing but @payhooks/core and Node (no @types/aws-lambda)', () => {
    const dist = resolve(import.meta.dirname, '../../packages/lambda/dist')
    const declarations = readdirSync(dist).filter((file) => file.endsWith('.d.ts'))
    expect(declarations).toContain('index.d.ts')
    const imported = declarations.flatMap((file) =>
      [...readFileSync(resolve(dist, file), 'utf8').matchAll(/from '([^']+)'/g)].map((m) => m[1]),
    )
    expect(imported.filter((id) => !id?.startsWith('./'))).toEqual(['@payhooks/core'])
  })
})
