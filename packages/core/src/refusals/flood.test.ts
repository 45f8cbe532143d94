// A flood of wrongly signed requests from one address must not hide another sender's failure: the log throttles
// per reason and per source, the signature doctor keeps a share of its time per source, and a spray of addresses
// grows neither the lines written nor what is kept.
import { sampleEvent } from '@payhooks/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import type { LogFields } from '../logging/log.js'
import { createWebhooks } from '../receiver/create.js'
import { DOCTOR_MAX_SOURCES, DoctorBudgets } from '../signature-doctor/index.js'
import type { RawDelivery } from '../types.js'
import { cryptoProvider, sign } from '../verify/signature.js'
import { MAX_SOURCES_PER_REASON } from './throttle.js'
import { missingSignature } from './unsigned.js'

const secret = 'whsec_flood_test_secret'
const event = sampleEvent('transaction_settled', { eventId: 'evt_flood_real' })
const compact = JSON.stringify(event)
const ATTACKER = '203.0.113.9'
const SENDER = '198.51.100.7'

afterEach(() => {
  vi.useRealTimers()
  vi.restoreAllMocks()
})

function structured() {
  const calls: { level: string; fields: LogFields; message: string }[] = []
  const push = (level: string) => (fields: LogFields, message: string) => calls.push({ level, fields, message })
  return { logger: { error: push('error'), warn: push('warn'), info: push('info') }, calls }
}

const delivery = (body: string, signature: string, remoteAddress?: string): RawDelivery => ({
  method: 'POST',
  body,
  getHeader: (name) => (name === 'service-hmac-sha256' ? signature : undefined),
  remoteAddress,
})

describe('a flood of wrongly signed requests', () => {
  it("leaves the real sender's failures their own line and hint, and says how many came from where", async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    // Every HMAC takes 50 µs of a clock that otherwise stands still: the doctor's time is spent by HMACs alone.
    let now = 1_000
    vi.spyOn(performance, 'now').mockImplementation(() => now)
    const match = cryptoProvider.match.bind(cryptoProvider)
    vi.spyOn(cryptoProvider, 'match').mockImplementation((secrets, body, header) => {
      now += 0.05
      return match(secrets, body, header)
    })
    const { logger, calls } = structured()
    const webhooks = createWebhooks({ secret, logger })
    const forged = await sign('whsec_the_attackers_guess', compact)
    const signed = await sign(secret, compact)
    const reserialized = JSON.stringify(event, null, 2)
    for (let i = 0; i < 600; i++) {
      expect((await webhooks.receive(delivery(compact, forged, ATTACKER))).status).toBe(401)
      // The real sender's three failures, a parser ahead of its verification, amid the flood.
      if (i % 200 === 100) {
        expect((await webhooks.receive(delivery(reserialized, signed, SENDER))).status).toBe(401)
      }
    }
    const own = calls.filter((call) => call.fields.source === SENDER)
    expect(own).toHaveLength(1)
    expect(own[0]).toMatchObject({
      level: 'warn',
      fields: { code: 'invalid_signature', signature_hint: 'body_reserialized', source: SENDER },
    })
    expect(own[0]?.message).toMatch(/^\[payhooks\] 401 invalid_signature from 198\.51\.100\.7: .*body_reserialized/)
    vi.advanceTimersByTime(1000)
    const told = calls.filter((call) => call.fields.suppressed !== undefined)
    expect(told).toHaveLength(2)
    expect(told).toContainEqual({
      level: 'warn',
      fields: expect.objectContaining({ source: ATTACKER, suppressed: 599 }),
      message: expect.stringMatching(/\(and 599 more like it from 203\.0\.113\.9 in the last 1 s, not logged/),
    })
    expect(told).toContainEqual({
      level: 'warn',
      fields: expect.objectContaining({ source: SENDER, suppressed: 2, signature_hint: 'body_reserialized' }),
      message: expect.stringMatching(/\(and 2 more like it from 198\.51\.100\.7 in the last 1 s, not logged/),
    })
    expect(calls).toHaveLength(4)
  })

  it('writes a bounded number of lines for a spray of addresses, the rest told as from so many others', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    const { logger, calls } = structured()
    const webhooks = createWebhooks({ secret, logger })
    const forged = await sign('whsec_the_attackers_guess', compact)
    for (let i = 0; i < 2000; i++) await webhooks.receive(delivery(compact, forged, `10.0.${i >> 8}.${i & 255}`))
    expect(calls).toHaveLength(MAX_SOURCES_PER_REASON + 1)
    vi.advanceTimersByTime(1000)
    const others = 2000 - MAX_SOURCES_PER_REASON - 1
    expect(calls).toHaveLength(MAX_SOURCES_PER_REASON + 2)
    expect(calls.at(-1)).toMatchObject({
      fields: { code: 'invalid_signature', suppressed: others, other_sources: 1024 },
      message: expect.stringMatching(new RegExp(`\\(and ${others} more like it from at least 1024 other addresses in`)),
    })
    expect(calls.at(-1)?.fields.source).toBeUndefined()
    // A source seen before the spray, quiet since: its next failure is written at once, the spray notwithstanding.
    vi.advanceTimersByTime(1000)
    await webhooks.receive(delivery(compact, forged, '10.0.0.0'))
    expect(calls.at(-1)?.fields.source).toBe('10.0.0.0')
  })

  it('logs missing signatures per source too, refused before any body is read', async () => {
    vi.useFakeTimers({ toFake: ['Date', 'setTimeout', 'clearTimeout'] })
    const { logger, calls } = structured()
    const webhooks = createWebhooks({ secret, logger })
    const unsigned = (remoteAddress: string): RawDelivery => ({
      method: 'POST',
      body: new Promise<Uint8Array>(() => {}),
      getHeader: () => undefined,
      remoteAddress,
    })
    for (let i = 0; i < 50; i++) expect((await webhooks.receive(unsigned(ATTACKER))).status).toBe(401)
    expect(webhooks.reject(missingSignature(), SENDER).status).toBe(401)
    expect(calls.map((call) => call.fields.source)).toEqual([ATTACKER, SENDER])
    expect(calls.map((call) => call.fields.code)).toEqual(['missing_signature', 'missing_signature'])
  })
})

describe("the signature doctor's time per source", () => {
  it('keeps a share per source, bounded however many addresses there are', async () => {
    let now = 1_000
    vi.spyOn(performance, 'now').mockImplementation(() => now)
    const budgets = new DoctorBudgets()
    const costly = async () => {
      now += 4
      return 'diagnosed'
    }
    // One address spends its own burst (10 ms), then gets nothing while the receiver still has time left.
    const flood: (string | undefined)[] = []
    for (let i = 0; i < 5; i++) flood.push(await budgets.within(ATTACKER, costly))
    expect(flood).toEqual(['diagnosed', 'diagnosed', 'diagnosed', undefined, undefined])
    now += 100 // the receiver's bucket refills 5 ms; the attacker's 1 ms, still below zero
    expect(await budgets.within(ATTACKER, costly)).toBeUndefined()
    expect(await budgets.within(SENDER, costly)).toBe('diagnosed')
    for (let i = 0; i < 3 * DOCTOR_MAX_SOURCES; i++) {
      now += 1_000
      await budgets.within(`10.1.${i >> 8}.${i & 255}`, costly)
    }
    const kept = (budgets as unknown as { sources: Map<string, unknown> }).sources.size
    expect(kept).toBeLessThanOrEqual(DOCTOR_MAX_SOURCES)
  })
})
