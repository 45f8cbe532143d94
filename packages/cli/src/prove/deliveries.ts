// The bodies prove sends: sample events of @payhooks/testing under ids that say they come from prove, signed as the
// service signs (HMAC-SHA256 of the raw bytes, upper-case hex, in service-hmac-sha256).
import { randomBytes } from 'node:crypto'
import { SIGNATURE_HEADER, sign } from '@payhooks/core'
import { sampleEvent } from '@payhooks/testing'
import type { Outgoing } from './send.js'

/** A short id of one run: every event id of the run starts `evt_prove_<run>_`. */
export function runId(): string {
  return `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`
}

/** Makes the events of one run and signs them with the run's secret. */
export class Deliveries {
  readonly run: string
  readonly #secret: string
  #count = 0

  constructor(secret: string, run = runId()) {
    this.#secret = secret
    this.run = run
  }

  /** The next event id of the run: `evt_prove_<run>_<n>`. */
  nextId(): string {
    this.#count += 1
    return `evt_prove_${this.run}_${this.#count}`
  }

  /** A fresh sample event of `eventType` (data `{}` for a type without a sample) under the next id. */
  event(eventType: string, options: { createdAt?: string; data?: Record<string, unknown> } = {}) {
    return sampleEvent(eventType, { eventId: this.nextId(), ...options })
  }

  /** `body` as the service would post it, signed with `secret` (the run's own by default). */
  async signed(label: string, body: string, eventId?: string, secret = this.#secret): Promise<Outgoing> {
    return {
      label,
      body,
      ...(eventId ? { eventId } : {}),
      headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: await sign(secret, body) },
    }
  }

  /** `event` serialized once and signed, as the service does. */
  async delivery(label: string, event: Record<string, unknown>): Promise<Outgoing> {
    return this.signed(label, JSON.stringify(event), event.event_id as string)
  }
}
