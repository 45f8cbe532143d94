// The board can replay payments: every state change needs the CSRF cookie's token echoed in a header (a form
// or an image cannot send one), a same-origin Origin, and JSON; every answer forbids framing, sniffing and any
// script but the board's own files.
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

/** Why a state-changing request is refused (one line), or undefined when it may go on. */
export function stateChangeRefusal(request: BoardRequest, allowedOrigins: readonly string[]): string | undefined {
  const origin = request.header('origin')
  if (!origin) return 'missing Origin header'
  let host: string
  try {
    host = new URL(origin).host
  } catch {
    return 'cross-origin request'
  }
  if (host !== request.header('host') && !allowedOrigins.includes(origin)) return 'cross-origin request'
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
