import { byId } from './dom.js'
import { state } from './state.js'

const TOKEN_KEY = 'payhooks-sandbox-token'

/** The token comes once as `?token=…`; it is kept for this tab and taken out of the address bar. */
export function takeToken(): void {
  const params = new URLSearchParams(location.search)
  const fromUrl = params.get('token')
  if (fromUrl) {
    sessionStorage.setItem(TOKEN_KEY, fromUrl)
    params.delete('token')
    const rest = params.toString()
    history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}${location.hash}`)
  }
  state.token = sessionStorage.getItem(TOKEN_KEY)
}

/** Keeps `token` for this tab, as typed into the token form. */
export function keepToken(token: string): void {
  state.token = token
  sessionStorage.setItem(TOKEN_KEY, token)
}

/** Calls a control route: GET without `body`, else POST it as JSON. Rejects with the route's message. */
export async function api(path: string, body?: unknown): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = {}
  if (state.token) headers['x-sandbox-token'] = state.token
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(path, {
    method: body === undefined ? 'GET' : 'POST',
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const answer = (await response.json().catch(() => ({}))) as Record<string, unknown>
  if (response.status === 401) askForToken(state.token ? 'That token was refused.' : undefined)
  if (!response.ok) {
    const error = answer.error as { message?: string } | undefined
    throw new Error(error?.message ?? `HTTP ${response.status}`)
  }
  return answer
}

export function askForToken(problem?: string): void {
  state.source?.close()
  setLive('locked')
  byId('token-problem').textContent = problem ?? ''
  byId('token-form').hidden = false
}

export function setLive(live: 'connecting' | 'live' | 'offline' | 'locked'): void {
  const element = byId('live')
  element.dataset.state = live
  element.textContent = { connecting: 'connecting…', live: 'live', offline: 'reconnecting…', locked: 'token needed' }[
    live
  ]
}
