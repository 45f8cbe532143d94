import type { IncomingMessage, ServerResponse } from 'node:http'
import { authenticate, type Caller } from './auth.js'
import { type Clock, isManualClock } from './clock.js'
import type { DeliveryEngine } from './delivery.js'
import { SandboxHttpError } from './errors.js'
import { checkUrl, parseSubscriptionBody, resourceOf, type SubscriptionStore } from './subscriptions.js'
import type { TokenIssuer } from './tokens.js'
import type { Sandbox, SandboxCredentials } from './types.js'

/** What the HTTP layer needs from the sandbox; `createSandbox` builds it. */
export interface SandboxCore {
  credentials: SandboxCredentials
  store: SubscriptionStore
  engine: DeliveryEngine
  clock: Clock
  emit: Sandbox['emit']
  advance: Sandbox['advance']
  subscriptionDeleted(id: string): void
  sendTest(caller: Caller, url: string, eventType: string): Promise<{ status?: number; error?: string }>
  clientToken: TokenIssuer
}

const MAX_BODY_BYTES = 1_048_576

interface Call {
  request: IncomingMessage
  /** Raw body text; empty when none was sent. */
  text: string
  /** The path segment after a route's prefix, decoded. */
  param: string
}

type Route = (core: SandboxCore, call: Call) => Promise<Reply> | Reply
interface Reply {
  status: number
  body?: unknown
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

function callerOf(core: SandboxCore, call: Call): Caller {
  return authenticate(
    core.credentials,
    header(call.request, 'authorization'),
    header(call.request, 'service-merchant-id'),
  )
}

function json(call: Call): Record<string, unknown> {
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

const ok = (body: unknown): Reply => ({ status: 200, body })
const noContent: Reply = { status: 204 }

function merchantIdField(value: unknown, field: string): number {
  const id = typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : value
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0) {
    throw new SandboxHttpError(400, `${field} must be a merchant id (an integer)`)
  }
  return id
}

// Every service route authenticates first, so a bad key is a 401 whatever the body holds.
const service: Record<string, Partial<Record<string, Route>>> = {
  '/ps/webhook/subscription': {
    POST(core, call) {
      const caller = callerOf(core, call)
      const subscription = core.store.create(caller, parseSubscriptionBody(json(call), false))
      return ok({ data: { id: subscription.id, signature_secret: subscription.signature_secret } })
    },
  },
  '/ps/webhook/subscription/test': {
    async POST(core, call) {
      const caller = callerOf(core, call)
      const body = json(call)
      const url = checkUrl(body.url)
      if (typeof body.event_type !== 'string' || body.event_type.trim() === '') {
        throw new SandboxHttpError(400, 'event_type must be a non-empty string')
      }
      const result = await core.sendTest(caller, url, body.event_type)
      if (result.status === undefined) throw new SandboxHttpError(502, `test webhook to ${url} failed: ${result.error}`)
      return ok({ data: { status_code: result.status } })
    },
  },
  '/ps/webhook/subscription/': {
    PUT(core, call) {
      const caller = callerOf(core, call)
      core.store.owned(caller, call.param)
      core.store.update(caller, call.param, parseSubscriptionBody(json(call), true))
      return noContent
    },
    GET(core, call) {
      return ok({ data: resourceOf(core.store.owned(callerOf(core, call), call.param)) })
    },
    DELETE(core, call) {
      core.store.delete(callerOf(core, call), call.param)
      core.subscriptionDeleted(call.param)
      return noContent
    },
  },
  '/ps/webhook/subscriptions': {
    GET(core, call) {
      const data = core.store.listOwned(callerOf(core, call)).map(resourceOf)
      return ok({ total_item_count: data.length, data })
    },
  },
  '/ps/webhook/manually_resend_webhooks': {
    async PUT(core, call) {
      const caller = callerOf(core, call)
      const { ids } = json(call)
      if (!Array.isArray(ids) || ids.length === 0 || !ids.every((id) => typeof id === 'string' && id !== '')) {
        throw new SandboxHttpError(400, 'ids must be a non-empty array of event ids')
      }
      const owned = (subscription: { id: string }) => core.store.isOwnedBy(caller, subscription.id)
      const unknown = ids.filter((id) => !core.engine.hasDeliveries(id, owned))
      if (unknown.length > 0) {
        throw new SandboxHttpError(404, `no event delivered to your subscriptions with id ${unknown.join(', ')}`)
      }
      await Promise.all([...new Set(ids as string[])].map((id) => core.engine.resend(id, owned)))
      return noContent
    },
  },
  '/ps/auth/reseller_client_token': {
    POST(core, call) {
      const caller = callerOf(core, call)
      if (caller.kind !== 'reseller') {
        throw new SandboxHttpError(403, 'the client token endpoint needs reseller authorization')
      }
      const body = json(call)
      const merchantId = merchantIdField(body.client_id, 'client_id')
      if (typeof body.api_key !== 'string' || body.api_key === '') {
        throw new SandboxHttpError(400, 'api_key must be the reseller key')
      }
      if (body.api_key !== caller.reseller.key) {
        throw new SandboxHttpError(401, 'api_key does not match the reseller key of the Authorization header')
      }
      if (!caller.reseller.merchantIds.includes(merchantId)) {
        throw new SandboxHttpError(403, `merchant ${merchantId} is not a merchant of this reseller`)
      }
      return ok({ data: core.clientToken(caller, merchantId) })
    },
  },
}

const control: Record<string, Partial<Record<string, Route>>> = {
  '/_sandbox/emit': {
    async POST(core, call) {
      const body = json(call)
      if (
        body.data !== undefined &&
        (typeof body.data !== 'object' || body.data === null || Array.isArray(body.data))
      ) {
        throw new SandboxHttpError(400, 'data must be an object')
      }
      const entry = await core.emit(body.event_type as string, body.data as Record<string, unknown> | undefined, {
        ...(body.merchant_id === undefined ? {} : { merchantId: merchantIdField(body.merchant_id, 'merchant_id') }),
        ...(body.event_id === undefined ? {} : { eventId: body.event_id as string }),
      })
      return ok({ data: entry })
    },
  },
  '/_sandbox/log': {
    GET(core) {
      const data = core.engine.log()
      return ok({ total_item_count: data.length, data })
    },
  },
  '/_sandbox/log/': {
    GET(core, call) {
      const entry = core.engine.entry(call.param)
      if (!entry) throw new SandboxHttpError(404, `no event ${call.param} in the log`)
      return ok({ data: entry })
    },
  },
  '/_sandbox/clock/advance': {
    async POST(core, call) {
      const { ms } = json(call)
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
        throw new SandboxHttpError(400, 'ms must be a number of milliseconds >= 0')
      }
      if (!isManualClock(core.clock)) throw new SandboxHttpError(409, 'the sandbox runs on a real clock')
      await core.advance(ms)
      return ok({ data: { now: new Date(core.clock.now()).toISOString() } })
    },
  },
  '/_sandbox/credentials': {
    GET(core) {
      return ok({ data: core.credentials })
    },
  },
}

/** Exact paths first, then `prefix/{param}` routes whose prefix ends with a slash. */
function resolve(path: string): { methods: Partial<Record<string, Route>>; param: string } | undefined {
  const table = path.startsWith('/_sandbox/') ? control : service
  const exact = table[path]
  if (exact) return { methods: exact, param: '' }
  const slash = path.lastIndexOf('/')
  const prefixed = table[path.slice(0, slash + 1)]
  const raw = path.slice(slash + 1)
  if (!prefixed || raw === '') return undefined
  try {
    return { methods: prefixed, param: decodeURIComponent(raw) }
  } catch {
    return undefined
  }
}

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolveBody, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    request.on('data', (chunk: Buffer) => {
      size += chunk.byteLength
      if (size > MAX_BODY_BYTES) {
        reject(new SandboxHttpError(413, `body larger than ${MAX_BODY_BYTES} bytes`))
        request.resume()
        return
      }
      chunks.push(chunk)
    })
    request.on('end', () => resolveBody(Buffer.concat(chunks).toString('utf8')))
    request.on('error', reject)
  })
}

function write(response: ServerResponse, reply: Reply, headers: Record<string, string> = {}): void {
  if (reply.status === 204 || reply.body === undefined) {
    response.writeHead(reply.status, headers).end()
    return
  }
  const text = JSON.stringify(reply.body)
  response
    .writeHead(reply.status, {
      ...headers,
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
    })
    .end(text)
}

/** The sandbox's node:http request listener. */
export function createSandboxHandler(core: SandboxCore): (request: IncomingMessage, response: ServerResponse) => void {
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://sandbox').pathname
    const method = request.method ?? 'GET'
    const found = resolve(path)
    if (!found) throw new SandboxHttpError(404, `no route ${method} ${path}`)
    const route = found.methods[method]
    if (!route) {
      throw new SandboxHttpError(405, `method ${method} not allowed on ${path}`, {
        allow: Object.keys(found.methods).join(', '),
      })
    }
    const text = await readBody(request)
    write(response, await route(core, { request, text, param: found.param }))
  }

  return (request, response) => {
    handle(request, response).catch((error: unknown) => {
      const known = error instanceof SandboxHttpError
      const status = known ? error.status : 500
      const message = known
        ? error.message
        : `internal error: ${error instanceof Error ? error.message : String(error)}`
      if (response.headersSent) {
        response.destroy()
        return
      }
      write(response, { status, body: { error: { message } } }, known ? error.headers : {})
    })
  }
}
