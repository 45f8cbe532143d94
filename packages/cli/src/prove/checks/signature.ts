// Refuse what the service did not sign (spec 6.2): no signature, another key's signature, bytes changed after signing.
import { SIGNATURE_HEADER } from '@payhooks/core'
import type { Check } from '../check.js'
import type { Outgoing } from '../send.js'
import type { Answer } from '../types.js'
import { refusal } from './refusal.js'

const refused = (answer: Answer, what: string, why: string) => refusal(answer, `acknowledged ${what}: ${why}`)

export const unsigned: Check = {
  id: 'no-signature',
  title: 'no signature',
  advice: `anyone can POST to your URL; only ${SIGNATURE_HEADER} proves the service sent it. Fix: answer 401 to a request without it, before parsing or running anything`,
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const signed = await deliveries.delivery('unsigned', event)
    const outgoing: Outgoing = { ...signed, headers: { 'content-type': 'application/json' } }
    return refused(await sender.send(outgoing), `a body without ${SIGNATURE_HEADER}`, 'the signature is not checked')
  },
}

export const wrongSecret: Check = {
  id: 'wrong-secret',
  title: 'signed with a wrong secret',
  advice: `a signature under another key proves nothing. Fix: compare HMAC-SHA256 of the raw body under your subscription's signature_secret (upper-case hex) with ${SIGNATURE_HEADER}, in constant time`,
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const outgoing = await deliveries.signed(
      'wrong secret',
      JSON.stringify(event),
      event.event_id as string,
      `whsec_prove_wrong_${deliveries.run}`,
    )
    return refused(await sender.send(outgoing), 'a body signed with another secret', 'the signature is not checked')
  },
}

export const tampered: Check = {
  id: 'body-changed',
  title: 'body changed after signing',
  advice:
    'a valid signature over other bytes lets anyone change an amount. Fix: verify the exact raw bytes received, never JSON re-serialized after parsing',
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const signed = await deliveries.delivery('changed body', event)
    const data = event.data as Record<string, unknown>
    const changed = JSON.stringify({ ...event, data: { ...data, settlement_amount: 1030 } })
    return refused(
      await sender.send({ ...signed, body: changed }),
      'a body changed after signing',
      'the signature is not checked against the bytes received',
    )
  },
}

export const signatureChecks = [unsigned, wrongSecret, tampered]
