// Who may use the control routes (`/_sandbox/*`): they emit, move the clock and return every
// credential, so on a shared machine or network they need the sandbox's token.
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { isIP } from 'node:net'
import { SandboxHttpError } from './errors.js'
import { isLoopbackAddress } from './targets.js'

/** The control token and when it is needed. */
export interface ControlGuard {
  readonly token: string
  /** `requireControlToken`: true, false, or undefined for auto. */
  readonly mode: boolean | undefined
  /** Set once the sandbox listens on an address other than loopback. */
  exposed: boolean
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name]
  return Array.isArray(value) ? value[0] : value
}

/** The token of `x-sandbox-token`, `authorization: Bearer`, or (GET only, for EventSource) `?token=`. */
function presentedToken(request: IncomingMessage, url: URL): string | undefined {
  const direct = header(request, 'x-sandbox-token')
  if (direct !== undefined) return direct.trim()
  const bearer = /^bearer\s+(\S+)\s*$/i.exec(header(request, 'authorization') ?? '')
  if (bearer) return bearer[1]
  if (request.method === 'GET' || request.method === 'HEAD') return url.searchParams.get('token') ?? undefined
  return undefined
}

const digest = (text: string) => createHash('sha256').update(text).digest()

/** Whether requests like this one must carry the token. */
export function tokenRequired(guard: ControlGuard, request: IncomingMessage): boolean {
  if (guard.mode !== undefined) return guard.mode
  return guard.exposed || !isLoopbackAddress(request.socket.localAddress ?? '')
}

function hostnameOf(host: string | undefined): string | undefined {
  if (!host) return undefined
  try {
    return new URL(`http://${host}`).hostname
  } catch {
    return undefined
  }
}

/** Names a DNS rebinding attack cannot take: localhost and IP literals. */
function isLocalName(hostname: string | undefined): boolean {
  if (hostname === undefined) return false
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return true
  return isIP(hostname.startsWith('[') ? hostname.slice(1, -1) : hostname) !== 0
}

/**
 * Throws a 401 or 403 unless the control request may go on: a browser request from another origin
 * is refused (403); a token sent must be right (401); without one, the token must not be required
 * (401) and, unless the token is waived (`requireControlToken: false`), the Host must be localhost
 * or an IP literal (403), so a page whose name was rebound to 127.0.0.1 cannot read the credentials.
 */
export function checkControlAccess(guard: ControlGuard, request: IncomingMessage, url: URL): void {
  const origin = header(request, 'origin')
  if (origin !== undefined) {
    let originHost: string | undefined
    try {
      originHost = new URL(origin).host
    } catch {
      originHost = undefined
    }
    if (originHost === undefined || originHost !== header(request, 'host')) {
      throw new SandboxHttpError(403, 'cross-origin requests to the control routes are refused')
    }
  }
  const presented = presentedToken(request, url)
  if (presented !== undefined) {
    if (!timingSafeEqual(digest(presented), digest(guard.token))) {
      throw new SandboxHttpError(401, 'wrong sandbox token', { 'www-authenticate': 'Bearer realm="payhooks-sandbox"' })
    }
    return
  }
  if (tokenRequired(guard, request)) {
    throw new SandboxHttpError(
      401,
      'the control routes need the sandbox token printed at start: x-sandbox-token or Authorization: Bearer header, or ?token= on GET',
      { 'www-authenticate': 'Bearer realm="payhooks-sandbox"' },
    )
  }
  // Waived on purpose (`requireControlToken: false`), as for a sandbox other containers reach by name.
  if (guard.mode === false) return
  const hostname = hostnameOf(header(request, 'host'))
  if (!isLocalName(hostname)) {
    throw new SandboxHttpError(
      403,
      'without the sandbox token the control routes answer only to localhost or an IP address in the Host header',
    )
  }
}
