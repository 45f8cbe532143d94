import { createWebhooks, type WebhookError, type WebhookStore } from '@payhooks/core'
import { expect, it } from 'vitest'
import { sampleEvent } from '../samples.js'
import { signedDelivery } from '../signing.js'
import type { ContractContext } from './types.js'

// Digests as the receiver makes them: 32 lower-case hex characters.
const A = '0123456789abcdef0123456789abcdef'
const B = 'fedcba9876543210fedcba9876543210'
const SECRET = 'whsec_store_contract'

/** The kept digest of a `done` or `processing` answer, if any. */
const digestOf = (result: Awaited<ReturnType<WebhookStore['claim']>>) =>
  result.status === 'claimed' ? undefined : result.digest

/**
 * A `done` answer to a claim with another digest (or none), keeping `digest`: all of it, or its first 64 bits (16 hex
 * characters) from a store that keeps no more in its done markers (`redisStore`). A claim with the same digest is
 * answered it whole, so an identical copy is never reported as a conflict.
 */
function expectDone(result: Awaited<ReturnType<WebhookStore['claim']>>, digest: string) {
  expect(result.status).toBe('done')
  const kept = digestOf(result) ?? ''
  expect([digest, digest.slice(0, 16)]).toContain(kept)
}

/** The tests of body digests (`claim`'s third argument), inside the contract's `describe`. */
export function digestTests(context: ContractContext): void {
  const { fleet, claimed, claimAfterExpiry, leaseMs: LEASE_MS, shortLeaseMs, digests } = context

  if (digests) {
    it('keeps the digest a claim was made with: answered with processing, then with done', async () => {
      const instance = fleet()
      const [owner, other] = [await instance(0), await instance(1)]
      const token = await claimed(owner, 'evt_digest', LEASE_MS, A)
      const meanwhile = await other.claim('evt_digest', LEASE_MS, B)
      expect(meanwhile.status).toBe('processing')
      expect(digestOf(meanwhile)).toBe(A)
      expect(await owner.complete('evt_digest', token)).toBe(true)
      for (const store of [other, owner]) {
        expectDone(await store.claim('evt_digest', LEASE_MS, B), A)
        expect(await store.claim('evt_digest', LEASE_MS, A)).toEqual({ status: 'done', digest: A })
        expectDone(await store.claim('evt_digest', LEASE_MS), A)
      }
    })

    it('keeps the digest of the claim that completed: one taking over a lease that ran out, or a released event', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      await claimed(first, 'evt_digest_taken', shortLeaseMs, A)
      const fresh = await claimAfterExpiry(second, 'evt_digest_taken', B)
      expect(digestOf(await first.claim('evt_digest_taken', LEASE_MS, A))).toBe(B)
      expect(await second.complete('evt_digest_taken', fresh)).toBe(true)
      expectDone(await first.claim('evt_digest_taken', LEASE_MS, A), B)

      const released = await claimed(first, 'evt_digest_released', LEASE_MS, A)
      expect(await first.release('evt_digest_released', released)).toBe(true)
      const again = await claimed(second, 'evt_digest_released', LEASE_MS, B)
      expect(await second.complete('evt_digest_released', again)).toBe(true)
      expectDone(await first.claim('evt_digest_released', LEASE_MS, A), B)
    })

    it('answers no digest for an event claimed without one', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      const token = await claimed(first, 'evt_no_digest')
      expect(digestOf(await second.claim('evt_no_digest', LEASE_MS, A))).toBeUndefined()
      expect(await first.complete('evt_no_digest', token)).toBe(true)
      expect(await second.claim('evt_no_digest', LEASE_MS, A)).toEqual({ status: 'done' })
    })
  } else {
    it('takes a digest with a claim and works as without one', async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      const token = await claimed(first, 'evt_digest_ignored', LEASE_MS, A)
      expect((await second.claim('evt_digest_ignored', LEASE_MS, B)).status).toBe('processing')
      expect(await first.complete('evt_digest_ignored', token)).toBe(true)
      expect((await second.claim('evt_digest_ignored', LEASE_MS, B)).status).toBe('done')
    })
  }

  it(
    digests
      ? 'through a receiver: an identical copy is a plain duplicate; one with other bytes too, reported with both digests'
      : 'through a receiver: every copy is a plain duplicate, with other bytes too, and nothing is reported',
    async () => {
      const instance = fleet()
      const [first, second] = [await instance(0), await instance(1)]
      const event = sampleEvent('transaction_settled', { eventId: 'evt_receiver_copy' })
      const original = JSON.stringify(event)
      const changed = JSON.stringify({ ...event, data: { ...(event.data as object), settlement_amount: 1 } })
      const runs: string[] = []
      const errors: WebhookError[] = []
      const receivers = [first, second].map((store) => {
        const webhooks = createWebhooks({ secret: SECRET, store })
        webhooks.onAny((handled) => {
          runs.push(handled.event_id)
        })
        webhooks.onError((error) => errors.push(error))
        return webhooks
      })
      const deliver = async (index: number, body: string) => {
        const { headers } = await signedDelivery(body, SECRET)
        const webhooks = receivers[index] as (typeof receivers)[number]
        const answer = await webhooks.receive({ body, getHeader: (name) => (headers as Record<string, string>)[name] })
        return { status: answer.status, body: JSON.parse(answer.body) as Record<string, unknown> }
      }
      expect((await deliver(0, original)).body).toMatchObject({ status: 'processed' })
      expect((await deliver(1, original)).body).toMatchObject({ status: 'duplicate' })
      expect(errors).toEqual([])
      expect(await deliver(1, changed)).toEqual({
        status: 200,
        body: { ok: true, event_id: 'evt_receiver_copy', status: 'duplicate' },
      })
      expect(runs).toEqual(['evt_receiver_copy'])
      if (!digests) {
        expect(errors).toEqual([])
        return
      }
      expect(errors).toHaveLength(1)
      const [conflict] = errors as [WebhookError & Record<string, unknown>]
      expect(conflict).toMatchObject({ code: 'event_conflict', eventId: 'evt_receiver_copy', inProgress: false })
      expect(conflict.receivedDigest).toMatch(/^[0-9a-f]{32}$/)
      // 64 bits from a store that keeps no more (see expectDone).
      expect(conflict.handledDigest).toMatch(/^[0-9a-f]{16}(?:[0-9a-f]{16})?$/)
      expect((conflict.receivedDigest as string).startsWith(conflict.handledDigest as string)).toBe(false)
    },
  )
}
