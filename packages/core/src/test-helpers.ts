// Shared by core's unit tests; not part of the build (tsconfig excludes it).
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type { WebhookResult } from './types.js'

/** A promise and the function that resolves it, to hold a handler or store call until the test lets it go. */
export function gate() {
  let open!: () => void
  const promise = new Promise<void>((resolve) => {
    open = resolve
  })
  return { promise, open }
}

/** Receives a `transaction_settled` event with id `eventId` (created at `createdAt`, default now), signed with `secret`. */
export async function deliverSettled(
  webhooks: {
    receive(delivery: {
      method: string
      body: string
      getHeader(name: string): string | undefined
    }): Promise<WebhookResult>
  },
  eventId: string,
  secret: string,
  createdAt?: string,
): Promise<WebhookResult> {
  const { body, headers } = await signedDelivery(sampleEvent('transaction_settled', { eventId, createdAt }), secret)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => (headers as Record<string, string>)[name] })
}
