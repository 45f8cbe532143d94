import { sampleEvent, signedRequest } from '@payhooks/testing'
import { describe, expect, it, vi } from 'vitest'
import {
  IncompleteBodyError,
  PayloadTooLargeError,
  RawBodyUnavailableError,
  type WebhookError,
} from './errors/index.js'
import { createWebhooks } from './receiver/create.js'
import { receiveWebRequest } from './web.js'

const secret = 'whsec_web_test'

function setup(maxBodyBytes?: number) {
  const errors: WebhookError[] = []
  const seen: string[] = []
  const webhooks = createWebhooks({ secret, ...(maxBodyBytes ? { maxBodyBytes } : {}) })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => void seen.push(event.event_id))
  return { webhooks, errors, seen }
}

describe('receiveWebRequest', () => {
  it('reads, verifies and answers a signed request as a Response', async () => {
    const { webhooks, seen } = setup()
    const response = await receiveWebRequest(webhooks, await signedRequest(sampleEvent('transaction_settled'), secret))
    expect(response.status).toBe(200)
    expect((await response.json()).status).toBe('processed')
    expect(seen).toHaveLength(1)
  })

  it('uses the bytes an earlier layer kept instead of the request body', async () => {
    const { webhooks, seen } = setup()
    const signed = await signedRequest(sampleEvent('transaction_settled', { eventId: 'evt_kept' }), secret)
    const kept = await signed.text()
    const response = await receiveWebRequest(webhooks, signed, { body: kept })
    expect(response.status).toBe(200)
    expect(seen).toEqual(['evt_kept'])
  })

  it('answers 500 raw_body_unavailable with the fix when only a parsed body is left', async () => {
    const { webhooks, errors, seen } = setup()
    const signed = await signedRequest(sampleEvent('transaction_settled'), secret)
    const response = await receiveWebRequest(webhooks, signed, { body: null, fix: 'Read it with text().' })
    expect(response.status).toBe(500)
    expect(await response.json()).toEqual({
      error: 'raw_body_unavailable',
      message: 'the request body was already parsed. Read it with text().',
    })
    expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError)
    expect(seen).toEqual([])
  })

  it('answers 500 raw_body_unavailable when something read the body before, with a default fix', async () => {
    const { webhooks, errors } = setup()
    const signed = await signedRequest(sampleEvent('transaction_settled'), secret)
    await signed.json()
    const response = await webhooks.handle(signed)
    expect(response.status).toBe(500)
    expect((await response.json()).message).toBe(
      'the request body was already read. Pass the request to payhooks before anything reads its body.',
    )
    expect(errors[0]).toBeInstanceOf(RawBodyUnavailableError)
  })

  it('answers 413 for an oversized body and 405 with Allow for another method', async () => {
    const { webhooks, errors } = setup(64)
    const big = await signedRequest(sampleEvent('transaction_settled'), secret)
    expect((await receiveWebRequest(webhooks, big)).status).toBe(413)
    const get = await receiveWebRequest(webhooks, new Request('http://localhost/', { method: 'GET' }))
    expect(get.status).toBe(405)
    expect(get.headers.get('allow')).toBe('POST')
    expect(errors.map((e) => e.code)).toEqual([new PayloadTooLargeError(64).code, 'method_not_allowed'])
  })

  it('answers 400 incomplete_body instead of rejecting when the body stream fails', async () => {
    const { webhooks, errors } = setup()
    const handler = vi.fn()
    webhooks.onAny(handler)
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(new Error('connection reset'))
      },
    })
    const request = new Request('http://localhost/', {
      method: 'POST',
      body: stream,
      headers: { 'service-hmac-sha256': 'A'.repeat(64) },
      duplex: 'half',
    } as RequestInit)
    const response = await receiveWebRequest(webhooks, request)
    expect(response.status).toBe(400)
    expect(await response.json()).toEqual({
      error: 'incomplete_body',
      message: 'request body ended before it was complete',
    })
    expect(errors[0]).toBeInstanceOf(IncompleteBodyError)
    expect((errors[0]?.cause as Error | undefined)?.message).toBe('connection reset')
    expect(handler).not.toHaveBeenCalled()
  })
})
