// Shared by the dead-letter unit tests (dead-letters/*.test.ts); not part of the build (tsconfig excludes it).
import type { DeadLetterStore } from '../dead-letters/types.js'
import type { WebhookError } from '../errors/index.js'
import { createWebhooks, memoryDeadLetterStore, SIGNATURE_HEADER } from '../index.js'
import { sign } from '../verify/signature.js'

export const SECRET = 'whsec_dead_letters_unit'
export const HOUR = 60 * 60 * 1000

export function settled(id: string, overrides: { amount?: unknown; createdAt?: string } = {}): string {
  const event: Record<string, unknown> = {
    event_type: 'transaction_settled',
    event_id: id,
    merchant_id: 1234,
    created_at: overrides.createdAt ?? new Date().toISOString(),
    data: {
      transaction_id: 'txn_1',
      transaction_amount: 10,
      transaction_surcharge_amount: 0,
      transaction_date: '2026-11-02T15:05:00Z',
      settlement_code: 'FUNDED',
      settlement_amount: overrides.amount ?? 10,
      settlement_date: '2026-11-03T07:59:00Z',
      transaction_net_amount: 10,
    },
  }
  return JSON.stringify(event)
}

export async function deliver(
  webhooks: { receive: ReturnType<typeof createWebhooks>['receive'] },
  body: string,
  secret = SECRET,
) {
  const headers: Record<string, string> = {
    [SIGNATURE_HEADER]: await sign(secret, body),
    'content-type': 'application/json',
  }
  const result = await webhooks.receive({ method: 'POST', body, getHeader: (name) => headers[name] })
  return { status: result.status, body: JSON.parse(result.body) as Record<string, unknown> }
}

/** A memory store that says it is durable, for the receiver's durable paths; `fail` makes its calls throw. */
export function durableStore(fail: Partial<Record<'init' | 'park' | 'get' | 'markReplayed' | 'shutdown', Error>> = {}) {
  const memory = memoryDeadLetterStore()
  const calls = { init: 0, shutdown: 0 }
  const store: DeadLetterStore = {
    durable: true,
    init() {
      calls.init++
      if (fail.init) throw fail.init
    },
    async park(event) {
      if (fail.park) throw fail.park
      memory.park(event)
    },
    get(eventId) {
      if (fail.get) throw fail.get
      return memory.get(eventId)
    },
    list: (query) => memory.list(query),
    markReplayed(eventId, at) {
      if (fail.markReplayed) throw fail.markReplayed
      return memory.markReplayed(eventId, at)
    },
    shutdown() {
      calls.shutdown++
      if (fail.shutdown) throw fail.shutdown
    },
  }
  return { store, memory, calls, fail }
}

export function receiver(
  deadLetters: DeadLetterStore | undefined,
  options: { secret?: Parameters<typeof createWebhooks>[0]['secret'] } = {},
) {
  const errors: WebhookError[] = []
  const runs: string[] = []
  const webhooks = createWebhooks({ secret: options.secret ?? SECRET, deadLetters, logger: { error() {} } })
  webhooks.onError((error) => errors.push(error))
  webhooks.onAny((event) => {
    runs.push(event.event_id)
  })
  return { webhooks, errors, runs }
}
