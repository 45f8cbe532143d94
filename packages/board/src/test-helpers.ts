// Shared by the board's unit tests; not part of the build (tsconfig excludes it).
import { createWebhooks, type DeadLetterStore, memoryDeadLetterStore, memoryStore } from '@payhooks/core'
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { createBoard } from './board.js'
import { CSRF_COOKIE, CSRF_HEADER } from './security.js'
import type { BoardAuditEntry, BoardOptions, BoardRequest, BoardResponse } from './types.js'

export const SECRET = 'whsec_board_unit'
export const HOST = 'ops.example.test'
export const TOKEN = 'A'.repeat(43)

export async function setUp(options: Partial<BoardOptions<{ user: string }>> = {}) {
  const store = memoryDeadLetterStore()
  const runs = new Map<string, number>()
  const webhooks = createWebhooks({ secret: SECRET, store: memoryStore(), deadLetters: store, logger: { error() {} } })
  webhooks.onAny((event) => {
    runs.set(event.event_id, (runs.get(event.event_id) ?? 0) + 1)
  })
  const audits: BoardAuditEntry[] = []
  const logs: string[] = []
  const board = createBoard<{ user: string }>({
    webhooks,
    authorize: (request) => request.user === 'ops',
    actor: (request) => request.user,
    onAudit: (entry) => {
      audits.push(entry)
    },
    logger: { warn: (_fields, message) => logs.push(message), info: (_fields, message) => logs.push(message) },
    origin: `https://${HOST}`,
    ...options,
  })
  return { store, webhooks, runs, board, audits, logs }
}

export async function park(
  store: DeadLetterStore,
  id: string,
  extra: {
    type?: string
    code?: 'schema_mismatch' | 'handler_failed'
    at?: string
    data?: Record<string, unknown>
    /** The exact body to park again (a store counts a park of the same bytes, and keeps the first of others). */
    body?: string
  } = {},
) {
  const event = sampleEvent(extra.type ?? 'transaction_settled', { eventId: id, data: extra.data })
  const { body, headers } = await signedDelivery(extra.body ?? event, SECRET)
  await store.park({
    eventId: id,
    eventType: String(event.event_type),
    body: new TextEncoder().encode(body),
    headers,
    code: extra.code ?? 'handler_failed',
    reason: 'ledger down',
    createdAt: undefined,
    parkedAt: new Date(extra.at ?? '2026-11-20T10:00:00Z'),
  })
  return body
}

export interface Call {
  method?: string
  path: string
  query?: string
  headers?: Record<string, string>
  body?: unknown
  user?: string
}

export function request({
  method = 'GET',
  path,
  query = '',
  headers = {},
  body,
  user = 'ops',
}: Call): BoardRequest<{ user: string }> {
  const all: Record<string, string> = { host: HOST, ...headers }
  return {
    method,
    path,
    base: '/admin/payhooks',
    query: new URLSearchParams(query),
    header: (name) => all[name],
    body: async () => (typeof body === 'string' ? body : JSON.stringify(body ?? {})),
    secure: true,
    native: { user },
  }
}

/** A state change as the page makes it: same origin, JSON, the cookie's token in the header. */
export const change = (path: string, body: unknown, headers: Record<string, string> = {}): Call => ({
  method: 'POST',
  path,
  body,
  headers: {
    origin: `https://${HOST}`,
    'content-type': 'application/json',
    cookie: `${CSRF_COOKIE}=${TOKEN}`,
    [CSRF_HEADER]: TOKEN,
    ...headers,
  },
})

export const json = (response: BoardResponse) => JSON.parse(String(response.body))
