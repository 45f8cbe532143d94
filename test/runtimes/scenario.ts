// Core's handle() end to end inside whichever runtime loads this file: Bun and Deno run it directly
// (`bun scenario.ts`, `deno run scenario.ts` print the report), workerd runs it bundled in worker.ts.
// test/runtimes/runtimes.test.ts asserts on the report. Web-standard globals only, so tsc checks
// it (and its typed handler) without any runtime's types.
import { createWebhooks, memoryStore, sign } from '@payhooks/core'

export const SECRET = 'whsec_runtime_test'
export const EVENT_ID = 'evt_runtime_1'
export const BODY = JSON.stringify({
  event_type: 'transaction_settled',
  event_id: EVENT_ID,
  merchant_id: 1234,
  created_at: '2026-11-03T08:00:00Z',
  data: {
    transaction_id: 'txn_runtime_1',
    transaction_amount: 10.3,
    transaction_surcharge_amount: 0.3,
    transaction_date: '2026-11-02T15:05:00Z',
    settlement_code: 'FUNDED',
    settlement_amount: 10.3,
    settlement_date: '2026-11-03T07:59:00Z',
    transaction_net_amount: 9.85,
  },
})

export interface Answer {
  status: number
  body: string
}

export interface RuntimeReport {
  /** `navigator.userAgent`: `Bun/…`, `Deno/…`, `Cloudflare-Workers`. */
  runtime: string
  /** Whether the runtime has a `process` global (core can only reach node:crypto through it). */
  hasProcess: boolean
  /** `crypto.subtle.sign` calls made while signing and handling: above 0 only on the Web Crypto path. */
  subtleSigns: number
  /** `sign(SECRET, BODY)` computed in this runtime. */
  signature: string
  valid: Answer
  duplicate: Answer
  tampered: Answer
  /** Other bytes under the handled event_id, validly signed: a duplicate, reported as an event_conflict. */
  conflict: Answer
  /** What the typed handler saw, one entry per run. */
  handled: { eventId: string; transactionId: string; amount: number }[]
  /** What `onError` was given, as `status code`. */
  errors: string[]
}

export async function runScenario(url = 'http://localhost/webhooks'): Promise<RuntimeReport> {
  const subtle = Object.getPrototypeOf(crypto.subtle) as SubtleCrypto
  const subtleSign = subtle.sign
  let subtleSigns = 0
  subtle.sign = function (this: SubtleCrypto, ...args: Parameters<SubtleCrypto['sign']>) {
    subtleSigns++
    return subtleSign.apply(this, args)
  }
  try {
    const handled: RuntimeReport['handled'] = []
    const errors: string[] = []
    // BODY is fixed, so every runtime signs the same bytes: its created_at is not aged.
    const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), maxEventAgeMs: Infinity })
    webhooks.on('transaction_settled', (event) => {
      // @ts-expect-error a misspelt field is a compile error: the handler is typed from the schema
      void event.data.settlement_amout
      handled.push({
        eventId: event.event_id,
        transactionId: event.data.transaction_id,
        amount: event.data.settlement_amount,
      })
    })
    webhooks.onError((error) => errors.push(`${error.status} ${error.code}`))

    const signature = await sign(SECRET, BODY)
    const post = async (body: string, signed = signature): Promise<Answer> => {
      const request = new Request(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'service-hmac-sha256': signed },
      })
      const response = await webhooks.handle(request)
      return { status: response.status, body: await response.text() }
    }
    const valid = await post(BODY)
    const duplicate = await post(BODY)
    const changed = BODY.replace('"settlement_amount":10.3', '"settlement_amount":1030')
    const tampered = await post(changed)
    const conflict = await post(changed, await sign(SECRET, changed))
    return {
      runtime: navigator.userAgent,
      hasProcess: 'process' in globalThis,
      subtleSigns,
      signature,
      valid,
      duplicate,
      tampered,
      conflict,
      handled,
      errors,
    }
  } finally {
    subtle.sign = subtleSign
  }
}

// Bun and Deno set import.meta.main for the entry module; the worker bundle and vitest leave it unset.
if ((import.meta as { main?: boolean }).main) {
  console.log(JSON.stringify({ ...(await runScenario()), core: import.meta.resolve('@payhooks/core') }))
}
