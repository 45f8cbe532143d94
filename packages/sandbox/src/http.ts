import type { IncomingMessage, ServerResponse } from 'node:http'
import { controlRoutes } from './control-routes.js'
import { SandboxHttpError } from './errors.js'
import { checkControlAccess } from './guard.js'
import type { Reply, Route, RouteTable, SandboxCore } from './routing.js'
import { serviceRoutes } from './service-routes.js'
import { dashboardAsset } from './ui.js'

export type { SandboxCore } from './routing.js'

const MAX_BODY_BYTES = 1_048_576

/** Exact paths first, then `prefix/{param}` routes whose prefix ends with a slash. */
function resolve(
  table: RouteTable,
  path: string,
): { methods: Partial<Record<string, Route>>; param: string } | undefined {
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
  if ('handled' in reply) return
  if ('text' in reply) {
    response
      .writeHead(reply.status, {
        ...headers,
        ...reply.headers,
        'content-length': String(Buffer.byteLength(reply.text)),
      })
      .end(reply.text)
    return
  }
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
    const url = new URL(request.url ?? '/', 'http://sandbox')
    const path = url.pathname
    const method = request.method ?? 'GET'
    // The dashboard's page, script and style sheet hold no data: they load without the token,
    // and the page then asks the guarded routes below with it.
    const asset = dashboardAsset(path)
    if (asset) {
      if (method !== 'GET' && method !== 'HEAD') {
        throw new SandboxHttpError(405, `method ${method} not allowed on ${path}`, { allow: 'GET, HEAD' })
      }
      response.writeHead(200, { ...asset.headers, 'content-length': String(Buffer.byteLength(asset.text)) })
      response.end(method === 'HEAD' ? undefined : asset.text)
      return
    }
    const isControl = path.startsWith('/_sandbox/')
    const found = resolve(isControl ? controlRoutes : serviceRoutes, path)
    if (isControl) checkControlAccess(core.guard, request, url)
    if (!found) throw new SandboxHttpError(404, `no route ${method} ${path}`)
    const route = found.methods[method]
    if (!route) {
      throw new SandboxHttpError(405, `method ${method} not allowed on ${path}`, {
        allow: Object.keys(found.methods).join(', '),
      })
    }
    const text = await readBody(request)
    write(response, await route(core, { request, response, url, text, param: found.param }))
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
