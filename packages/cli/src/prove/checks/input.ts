// Input the service never sends: malformed JSON, an oversized body, a method other than POST. Each costs the
// receiver little and gets a fast non-2XX with a reason; no handler runs.
import { answerText, type Check, is2xx, isError, pass, warn } from '../check.js'
import type { Answer } from '../types.js'
import { refusal } from './refusal.js'

/** "Fast" for a refusal of bad input: it needs no handler, store or network, so anything slower is doing too much. */
export const FAST_MS = 2000
/**
 * The oversized body: 2 MiB, twice the kit's default `maxBodyBytes` (1 MiB) and about a thousand times the largest
 * event the spec shows (under 2 KB), yet quick to send to a staging deployment.
 */
export const OVERSIZED_BYTES = 2 * 1024 * 1024

const fastRefusal = (answer: Answer, what: string) =>
  refusal(answer, `acknowledged ${what}: ${answerText(answer)}`, { fastMs: FAST_MS })

export const malformedJson: Check = {
  id: 'malformed-json',
  title: 'malformed JSON (signed)',
  advice:
    'a body that is not JSON is never a delivery. Fix: answer 400 with a reason at once; do not let a parse error become a 500 or run anything',
  async run({ sender, deliveries }) {
    const id = deliveries.nextId()
    const body = `{"event_type":"transaction_settled","event_id":"${id}","data":{"transaction_id":`
    return fastRefusal(await sender.send(await deliveries.signed('malformed JSON', body, id)), 'malformed JSON')
  },
}

export const oversized: Check = {
  id: 'oversized-body',
  title: `oversized body (${OVERSIZED_BYTES / 1024 / 1024} MiB, signed)`,
  advice:
    'a body far larger than any event costs memory and time before its signature can be checked. Fix: cap the body (the kit: maxBodyBytes, 1 MiB) and answer 413 without reading the rest',
  async run({ sender, deliveries }) {
    const event = deliveries.event('transaction_settled')
    const head = JSON.stringify(event).slice(0, -1)
    const padding = 'x'.repeat(OVERSIZED_BYTES - head.length - 20)
    const body = `${head},"prove_padding":"${padding}"}`
    const outgoing = await deliveries.signed('oversized', body, event.event_id as string)
    return fastRefusal(await sender.send(outgoing), `a ${OVERSIZED_BYTES} byte body`)
  },
}

export const otherMethod: Check = {
  id: 'method-get',
  title: 'a method other than POST (GET)',
  advice:
    'the service only POSTs; a GET that answers 2XX makes a probe or a crawler look like a delivery. Fix: answer 405 with Allow: POST',
  async run({ sender }) {
    const answer = await sender.send({ label: 'GET', method: 'GET' })
    return {
      answers: [answer],
      judge() {
        if (is2xx(answer)) return warn(`answered GET ${answerText(answer)}`)
        if (isError(answer)) return warn(`answered GET with an error: ${answerText(answer)}`)
        return pass(`refused: ${answerText(answer)}`)
      },
    }
  },
}

export const inputChecks = [malformedJson, oversized, otherMethod]
