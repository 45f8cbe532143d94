// Shared by core's unit tests of a receiver (receiver/*.test.ts); not part of the build (tsconfig excludes it).
import { signedDelivery } from '@payhooks/testing'
import type { WebhookError } from '../errors/index.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhookResult } from '../types.js'
import type { WebhooksOptions } from '../webhooks-options.js'

export const secret = 'whsec_core_test'

/** A receiver on {@link secret} (unless `options` sets one) whose onError reports are kept in `errors`. */
export function setup(options: Partial<WebhooksOptions> = {}) {
  const errors: WebhookError[] = []
  const webhooks = createWebhooks({ secret, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors }
}

/** Receives `event` signed with {@link secret}; `body` and `header` replace what was signed, a null header is left out. */
export async function deliver(
  webhooks: { receive: (d: { body: string; getHeader: (n: string) => string | undefined }) => Promise<WebhookResult> },
  event: unknown,
  options: { signWith?: string; body?: string; header?: string | null } = {},
) {
  const signed = await signedDelivery(event, options.signWith ?? secret)
  const body = options.body ?? signed.body
  const header = options.header === undefined ? signed.headers['service-hmac-sha256'] : options.header
  const result = await webhooks.receive({
    body,
    getHeader: (name) => (name === 'service-hmac-sha256' && header !== null ? header : undefined),
  })
  return { ...result, json: JSON.parse(result.body) as Record<string, unknown> }
}

export const deferred = () => {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}
