// Calls to the board's JSON API, relative to the page. State changes carry the page's CSRF token.
const token = document.querySelector<HTMLMetaElement>('meta[name="payhooks-board-csrf"]')?.content ?? ''

export interface Session {
  readOnly: boolean
  canDelete: boolean
  durable: boolean | null
  /** Whether the receiver has a journal (the Events page). */
  journal?: boolean
  csrfHeader: string
}

export interface Summary {
  eventId: string
  eventType: string
  code: string
  reason: string
  parkCount: number
  status: string
  parkedAt: string
  firstParkedAt: string
  replayedAt: string | null
  createdAt: string | null
  size: number
}

export interface Letter extends Summary {
  hint: string
  contentType: string | null
  body: { base64: string; text: string | null; pretty: string | null }
}

export interface Outcome {
  eventId: string
  status: string
  code?: string
}

export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly json: Record<string, unknown>,
  ) {
    super(message)
  }
}

async function call<T>(path: string, init?: RequestInit): Promise<T> {
  const response = await fetch(path, { credentials: 'same-origin', ...init })
  const json = (await response.json().catch(() => ({}))) as Record<string, unknown>
  if (!response.ok) throw new ApiError(String(json.error ?? response.statusText), response.status, json)
  return json as T
}

export const get = <T>(path: string) => call<T>(`api/${path}`)

export function post<T>(path: string, body: unknown, header: string): Promise<T> {
  return call<T>(`api/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [header]: token },
    body: JSON.stringify(body),
  })
}
