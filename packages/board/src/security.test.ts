// The board's own origin, for the CSRF check of replay and delete: from its configuration, or the address it is
// reached by, never from a name in the request's Host header (a page of another site rebinding its name to the server).
import { describe, expect, it } from 'vitest'
import { createBoard } from './board.js'
import { change, json, request, setUp } from './test-helpers.js'

describe('the board origin', () => {
  it("takes its own origin from its configuration, never from a request's Host: a rebound name is refused", async () => {
    const { webhooks } = await setUp()
    const unconfigured = createBoard({ webhooks, authorize: () => true })
    // A page of evil.example whose name now resolves to this server (DNS rebinding): its Origin matches its Host.
    const rebound = change(
      '/api/dead-letters/delete',
      { eventIds: ['evt_rebound'] },
      { origin: 'https://evil.example' },
    )
    const refused = await unconfigured.handle(
      request({ ...rebound, headers: { ...rebound.headers, host: 'evil.example' } }),
    )
    expect(refused.status).toBe(403)
    expect(json(refused).error).toBe(
      "origin https://evil.example is not the board's: set createBoard({ origin: 'https://evil.example' }) if operators reach it there",
    )
    // Configured, the Host does not matter (a proxy may rewrite it), the Origin does.
    const configured = createBoard({ webhooks, authorize: () => true, origin: 'https://ops.example.test' })
    const proxied = change('/api/dead-letters/delete', { eventIds: ['evt_x'] }, { host: 'internal:8080' })
    expect((await configured.handle(request(proxied))).status).toBe(200)
    expect(
      (await configured.handle(request({ ...rebound, headers: { ...rebound.headers, host: 'evil.example' } }))).status,
    ).toBe(403)
    // Reached by an address, which no other site can rebind: that address is its origin, its scheme compared too.
    const local = (headers: Record<string, string>) =>
      unconfigured.handle(
        request(change('/api/dead-letters/delete', { eventIds: ['evt_x'] }, { host: '127.0.0.1:3000', ...headers })),
      )
    expect((await local({ origin: 'https://127.0.0.1:3000' })).status).toBe(200)
    expect((await local({ origin: 'http://127.0.0.1:3000', 'x-forwarded-proto': 'https' })).status).toBe(403)
    expect((await local({ origin: 'https://localhost:3000' })).status).toBe(403)
    expect(() => createBoard({ webhooks, authorize: () => true, origin: 'admin.example' })).toThrow(
      /origin must be an origin/,
    )
  })
})
