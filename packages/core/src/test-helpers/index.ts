// Shared by core's unit tests; not part of the build (tsconfig excludes it).
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import type { WebhookResult } from '../types.js'

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

/**
 * The body of a `transaction_settled` event with id `eventId` (created at `createdAt`, default now): made on first
 * use, the same bytes every call after for the same id and `createdAt`.
 */
export function settledBody(eventId: string, createdAt?: string): string {
  const key = `${eventId}\n${createdAt ?? ''}`
  let body = bodies.get(key)
  if (body === undefined) {
    body = JSON.stringify(sampleEvent('transaction_settled', { eventId, createdAt }))
    bodies.set(key, body)
  }
  return body
}

/** Receives {@link settledBody}'s event, signed with `secret`. */
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
  const { body, headers } = await signedDelivery(settledBody(eventId, createdAt), secret)
  return webhooks.receive({ method: 'POST', body, getHeader: (name) => (headers as Record<string, string>)[name] })
}

/** A logger that records what it is given at `error` and `warn` (its `info` drops), for tests that read the log. */
export function recorder() {
  const calls: { level: string; fields: unknown; message: unknown }[] = []
  const logger = {
    error: (fields: unknown, message?: unknown) => calls.push({ level: 'error', fields, message }),
    warn: (fields: unknown, message?: unknown) => calls.push({ level: 'warn', fields, message }),
    info: () => {},
  }
  return { logger, calls }
}
