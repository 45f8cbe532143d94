// The board can replay payments: every state change needs the CSRF cookie's token echoed in a header (a form
// or an image cannot send one), an Origin the board was configured with (or, reached by an address such as
// 127.0.0.1, that address's), and JSON; every answer forbids framing, sniffing and any script but the board's own
// files.
import { randomBytes, timingSafeEqual } from 'node:crypto'
import type { BoardRequest } from './types.js'

export const CSRF_COOKIE = 'payhooks_board_csrf'
export const CSRF_HEADER = 'x-payhooks-board-csrf'

export const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ')

export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
  'cache-control': 'no-store',
}

const TOKEN = /^[A-Za-z0-9_-]{43}$/

export function newToken(): string {
  return randomBytes(32).toString('base64url')
}

/** The CSRF cookie's token, when the request carries a well-formed one. */
export function cookieToken(request: BoardRequest): string | undefined {
  for (const part of (request.header('cookie') ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2)
    if (name === CSRF_COOKIE && value && TOKEN.test(value)) return value
  }
  return undefined
}

export function tokenCookie(token: string, request: BoardRequest): string {
  const secure = request.header('x-forwarded-proto') === 'https' ? '; Secure' : ''
  return `${CSRF_COOKIE}=${token}; Path=${request.base || '/'}; HttpOnly; SameSite=Strict${secure}`
}

function sameToken(a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** `scheme://host[:port]` as the URL standard writes it (default ports dropped), or undefined when not an origin. */
function originOf(text: string): string | undefined {
  try {
    const url = new URL(text)
    return url.origin === 'null' ? undefined : url.origin
  } catch {
    return undefined
  }
}

/** The origin a request was asked on: `Host`, with the scheme a proxy reports (`x-forwarded-proto`), else the connection's. */
function hostOrigin(request: BoardRequest): string | undefined {
  const host = request.header('host')
  if (!host) return undefined
  const forwarded = request.header('x-forwarded-proto')?.split(',')[0]?.trim().toLowerCase()
  const scheme = forwarded === 'https' || forwarded === 'http' ? forwarded : request.secure ? 'https' : 'http'
  return originOf(`${scheme}://${host}`)
}

/**
 * {@link hostOrigin}, only when `Host` names a loopback host or an IP address: a name in `Host` is whatever the
 * browser asked for, and a page of another site that resolves its own name to this server (DNS rebinding) sends its
 * name, so a name is never taken as the board's own. An address cannot be rebound: a page served from it is the board's.
 */
function addressedOrigin(request: BoardRequest): string | undefined {
  const origin = hostOrigin(request)
  if (origin === undefined) return undefined
  const { hostname } = new URL(origin)
  const address =
    hostname === 'localhost' ||
    hostname.endsWith('.localhost') ||
    hostname.startsWith('[') ||
    /^\d{1,3}(\.\d{1,3}){3}$/.test(hostname)
  return address ? origin : undefined
}

/**
 * The listed origins as {@link originOf} writes them (`https://admin.example.com:443/` is `https://admin.example.com`),
 * or a TypeError naming the option (`allowedOrigins`, `origin`) when one is not an origin (a bare host, a path).
 */
export function checkAllowedOrigins(allowedOrigins: readonly string[], option = 'allowedOrigins'): string[] {
  if (!Array.isArray(allowedOrigins)) throw new TypeError(`createBoard: ${option} must be an array of origins`)
  return allowedOrigins.map((entry) => {
    const origin = typeof entry === 'string' ? originOf(entry) : undefined
    if (origin === undefined || !/^https?:\/\//i.test(entry) || new URL(entry).href !== `${origin}/`) {
      throw new TypeError(
        `createBoard: ${option} must be ${option === 'origin' ? 'an origin' : 'origins'} (scheme://host[:port]), such as https://admin.example.com`,
      )
    }
    return origin
  })
}

/** Why a state-changing request is refused (one line), or undefined when it may go on. */
export function stateChangeRefusal(request: BoardRequest, allowedOrigins: readonly string[]): string | undefined {
  const originHeader = request.header('origin')
  if (!originHeader) return 'missing Origin header'
  const origin = originOf(originHeader)
  if (origin === undefined) return 'cross-origin request'
  if (!allowedOrigins.includes(origin) && origin !== addressedOrigin(request)) {
    // Asked on a name the board was not told is its own: say how to tell it, rather than trust the name.
    return origin === hostOrigin(request)
      ? `origin ${origin} is not the board's: set createBoard({ origin: '${origin}' }) if operators reach it there`
      : 'cross-origin request'
  }
  const site = request.header('sec-fetch-site')
  if (site !== undefined && site !== 'same-origin') return 'cross-origin request'
  if (!(request.header('content-type') ?? '').toLowerCase().startsWith('application/json')) {
    return 'content-type must be application/json'
  }
  const cookie = cookieToken(request)
  const header = request.header(CSRF_HEADER)
  if (!cookie || !header || !sameToken(cookie, header)) return 'missing or wrong CSRF token'
  return undefined
}
