// What the routes of the HTTP layer share: the sandbox they act on, a request, an answer.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Caller } from './auth.js'
import type { Clock } from './clock.js'
import type { DeliveryEngine } from './delivery.js'
import { SandboxHttpError } from './errors.js'
import type { EventHub } from './events.js'
import type { ControlGuard } from './guard.js'
import type { PostResult } from './send.js'
import type { SubscriptionStore } from './subscriptions.js'
import type { TokenIssuer } from './tokens.js'
import type { DashboardEvents, Sandbox, SandboxCredentials } from './types.js'

/** What the HTTP layer needs from the sandbox; `createSandbox` builds it. */
export interface SandboxCore {
  credentials: SandboxCredentials
  store: SubscriptionStore
  engine: DeliveryEngine
  clock: Clock
  emit: Sandbox['emit']
  advance: Sandbox['advance']
  subscriptionDeleted(id: string): void
  sendTest(caller: Caller, url: string, eventType: string): Promise<PostResult>
  clientToken: TokenIssuer
  guard: ControlGuard
  hub: EventHub
  /** Why an event of `eventType` for `merchantId` reached no subscription. */
  noDeliveryReason(eventType: string, merchantId: number): string
  /** The dashboard's first view, sent as the `hello` event. */
  hello(): DashboardEvents['hello']
}

export interface Call {
  request: IncomingMessage
  response: ServerResponse
  url: URL
  /** Raw body text; empty when none was sent. */
  text: string
  /** The path segment after a route's prefix, decoded. */
  param: string
}

/** JSON (`body`), other content (`text` and its headers), or a response the route wrote itself. */
export type Reply =
  | { status: number; body?: unknown }
  | { status: number; text: string; headers: Record<string, string> }
  | { handled: true }

export type Route = (core: SandboxCore, call: Call) => Promise<Reply> | Reply
export type RouteTable = Record<string, Partial<Record<string, Route>>>

export function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

export function json(call: Call): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(call.text)
  } catch {
    throw new SandboxHttpError(400, 'body must be valid JSON')
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new SandboxHttpError(400, 'body must be a JSON object')
  }
  return value as Record<string, unknown>
}

export const ok = (body: unknown): Reply => ({ status: 200, body })
export const noContent: Reply = { status: 204 }

export function merchantIdField(value: unknown, field: string): number {
  const id = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
    throw new SandboxHttpError(400, `${field} must be a merchant id (an integer)`)
  }
  return id
}

export function eventIdsField(value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0 || !value.every((id) => typeof id === 'string' && id !== '')) {
    throw new SandboxHttpError(400, 'ids must be a non-empty array of event ids')
  }
  return [...new Set(value as string[])]
}
