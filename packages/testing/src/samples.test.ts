import { eventSchemas } from '@payhooks/core'
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { sampleEvent, sampleEventTypes } from './samples.js'

describe('sampleEvent', () => {
  it.each(sampleEventTypes)('gives each %s its own ids, and stays valid for its schema', (type) => {
    const [a, b] = [sampleEvent(type), sampleEvent(type)]
    const dataA = a.data as Record<string, unknown>
    const dataB = b.data as Record<string, unknown>
    expect(a.event_id).not.toBe(b.event_id)
    for (const field of ['transaction_id', 'external_id', 'transaction_external_id']) {
      if (/^(txn_|order-)/.test(String(dataA[field]))) expect(dataA[field]).not.toBe(dataB[field])
    }
    if ('transaction_id' in dataA) expect(dataA.transaction_id).toMatch(/^txn_[0-9a-f]{8}$/)
    for (const event of [a, b]) expect(v.safeParse(eventSchemas[type], event).issues).toBeUndefined()
  })

  it('lets data set the ids', () => {
    const event = sampleEvent('transaction_settled', { data: { transaction_id: 'txn_mine' } })
    expect((event.data as { transaction_id: string }).transaction_id).toBe('txn_mine')
  })

  it('leaves a null or non-order external id alone', () => {
    expect(
      (sampleEvent('transaction_returned').data as { transaction_external_id: unknown }).transaction_external_id,
    ).toBeNull()
    expect((sampleEvent('merchant_activated_for_payment_type').data as { external_id: unknown }).external_id).toBe(
      'partner-42',
    )
  })
})
