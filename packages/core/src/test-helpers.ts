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

/** One body per event id and creation time: the service resends the bytes it stored, and other bytes would be a
 * conflicting copy. */
const bodies = new Map<string, string>()

/** Receives a `transaction_settled` event with id `eventId` (created at `createdAt`, default now), signed with
 * `secret`; the same bytes each time for the same id and `createdAt`. */
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
  const key = `${eventId}\n${createdAt ?? ''}`
  let event = bodies.get(key)
  if (event === undefined) {
    event = JSON.stringify(sampleEvent('transaction_settled', { eventId, createdAt }))
    bodies.set(key, event)
  }
  const { body, headers } = await signedDelivery(event, secret)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => (headers as Record<string, string>)[name] })
}
