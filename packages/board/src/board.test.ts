import { type DeadLetterCountQuery, SIGNATURE_HEADER } from '@payhooks/core'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { createBoard } from './board.js'
import { CSP, CSRF_HEADER } from './security.js'
import { change, HOST, json, park, request, setUp } from './test-helpers.js'
import { BodyTooLargeError, MAX_BODY_BYTES } from './types.js'

afterEach(() => {
  vi.unstubAllEnvs()
})

describe('createBoard', () => {
  it('refuses to be made without authorize; the development opt-out warns, and is refused in production', async () => {
    const { webhooks } = await setUp()
    expect(() => createBoard({ webhooks })).toThrow(/authorize is required/)
    const warnings: string[] = []
    vi.stubEnv('NODE_ENV', 'development')
    const open = createBoard({ webhooks, unsafeNoAuthorization: true, logger: { warn: (_f, m) => warnings.push(m) } })
    expect(warnings).toEqual([expect.stringContaining('no authorization')])
    expect((await open.handle(request({ path: '/api/session' }))).status).toBe(200)
    vi.stubEnv('NODE_ENV', 'production')
    expect(() => createBoard({ webhooks, unsafeNoAuthorization: true })).toThrow(/production/)
  })

  it('answers 403 to every request authorize refuses, page, files and API alike', async () => {
    const { board, store } = await setUp()
    await park(store, 'evt_secret')
    for (const path of ['/', '/assets/app.js', '/api/dead-letters', '/api/dead-letters/evt_secret']) {
      const response = await board.handle(request({ path, user: 'mallory' }))
      expect(response.status).toBe(403)
      expect(String(response.body)).not.toContain('evt_secret')
    }
    const replay = await board.handle({
      ...request(change('/api/dead-letters/replay', { eventIds: ['evt_secret'] })),
      native: { user: 'mallory' },
    })
    expect(replay.status).toBe(403)
    expect((await store.get('evt_secret'))?.status).toBe('parked')
  })

  it('serves the page with a strict CSP, no inline script, and the CSRF cookie token in a meta tag', async () => {
    const { board } = await setUp()
    const response = await board.handle(request({ path: '/' }))
    expect(response.status).toBe(200)
    const csp = response.headers['content-security-policy']
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("default-src 'none'")
    expect(csp).not.toContain('unsafe')
    const html = String(response.body)
    expect(html.match(/<script[^>]*>/g)).toEqual(['<script type="module" src="assets/app.js">'])
    expect(html).not.toMatch(/<script[^>]*>[^<]/)
    const cookie = response.headers['set-cookie'] ?? ''
    const token = /payhooks_board_csrf=([^;]+)/.exec(cookie)?.[1]
    expect(cookie).toContain('HttpOnly')
    expect(cookie).toContain('SameSite=Strict')
    expect(cookie).toContain('Path=/admin/payhooks')
    expect(html).toContain(`<meta name="payhooks-board-csrf" content="${token}">`)
    expect((await board.handle(request({ path: '' }))).headers.location).toBe('/admin/payhooks/')
    expect((await board.handle(request({ path: '/assets/app.js' }))).status).toBe(200)
    expect((await board.handle(request({ path: '/assets/../board.js' }))).status).toBe(404)
  })

  it('lists parked letters newest first, with filters on code, type, time and id, in pages', async () => {
    const { board, store } = await setUp()
    for (let i = 0; i < 5; i++) await park(store, `evt_${i}`, { at: `2026-11-20T10:0${i}:00Z` })
    await park(store, 'evt_schema', {
      code: 'schema_mismatch',
      type: 'transaction_refunded',
      at: '2026-11-20T11:00:00Z',
    })
    const list = async (query: string) => json(await board.handle(request({ path: '/api/dead-letters', query })))
    const first = await list('limit=2')
    expect(first.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_schema', 'evt_4'])
    expect(first.hasMore).toBe(true)
    const last = await list('limit=2&offset=4')
    expect(last.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_1', 'evt_0'])
    expect(last.hasMore).toBe(false)
    // Keyset pages: older past the last row, newer back from the first, the same letters as by offset.
    expect(first.newer).toBeNull()
    const second = await list(`limit=2&after=${first.older}`)
    expect(second.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_3', 'evt_2'])
    const third = await list(`limit=2&after=${second.older}`)
    expect(third.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_1', 'evt_0'])
    expect([third.hasMore, third.older]).toEqual([false, null])
    const back = await list(`limit=2&before=${third.newer}`)
    expect(back.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_3', 'evt_2'])
    expect(back.older).toBe(second.older)
    const top = await list(`limit=2&before=${back.newer}`)
    expect(top.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_schema', 'evt_4'])
    expect(top.newer).toBeNull()
    // A letter parked meanwhile shifts no keyset page: the second page still starts after evt_4.
    await park(store, 'evt_new', { at: '2026-11-20T12:00:00Z' })
    expect((await list(`limit=2&after=${first.older}`)).letters[0].eventId).toBe('evt_3')
    expect((await list(`limit=2&before=${back.newer}`)).newer).not.toBeNull()
    expect((await list('code=schema_mismatch')).letters).toHaveLength(1)
    expect((await list('eventType=transaction_refunded')).letters[0].eventId).toBe('evt_schema')
    const window = await list('from=2026-11-20T10:01:00Z&to=2026-11-20T10:03:00Z')
    expect(window.letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_2', 'evt_1'])
    expect((await list('eventId=evt_3')).letters.map((l: { eventId: string }) => l.eventId)).toEqual(['evt_3'])
    expect((await list('eventId=evt_3&code=schema_mismatch')).letters).toEqual([])
    for (const query of [
      'code=nope',
      'limit=0',
      'limit=1000',
      'from=yesterday',
      'status=gone',
      'after=x',
      'before=%7B',
    ]) {
      expect((await board.handle(request({ path: '/api/dead-letters', query }))).status).toBe(400)
    }
  })

  it('shows one letter whole: the exact bytes, pretty JSON, hint and counts, never the signature', async () => {
    const { board, store } = await setUp()
    const body = await park(store, 'evt_whole', { data: { note: '<script>alert(1)</script>' } })
    await park(store, 'evt_whole', { body, at: '2026-11-21T10:00:00Z' })
    const stored = await store.get('evt_whole')
    const response = await board.handle(request({ path: '/api/dead-letters/evt_whole' }))
    const letter = json(response)
    expect(Buffer.from(letter.body.base64, 'base64')).toEqual(Buffer.from(stored?.body ?? []))
    expect(letter.body.text).toBe(new TextDecoder().decode(stored?.body))
    expect(JSON.parse(letter.body.pretty)).toEqual(JSON.parse(letter.body.text))
    expect(letter).toMatchObject({
      eventId: 'evt_whole',
      code: 'handler_failed',
      parkCount: 2,
      status: 'parked',
      contentType: 'application/json',
    })
    expect(letter.firstParkedAt).toBe('2026-11-20T10:00:00.000Z')
    expect(letter.hint).toMatch(/replay/i)
    expect(String(response.body)).not.toContain(stored?.headers[SIGNATURE_HEADER])
    expect(String(response.body)).not.toContain(SIGNATURE_HEADER)
    expect(response.headers['content-type']).toContain('application/json')
    expect(body.length).toBeGreaterThan(0)
    expect((await board.handle(request({ path: '/api/dead-letters/evt_none' }))).status).toBe(404)
    expect((await board.handle(request({ path: '/api/dead-letters/evt_%E0%A4%A' }))).status).toBe(400)
  })

  it('replays through webhooks.deadLetters: handlers run once, a second replay is a duplicate, each audited', async () => {
    const { board, store, runs, audits, logs } = await setUp()
    await park(store, 'evt_replay')
    const replay = () => board.handle(request(change('/api/dead-letters/replay', { eventIds: ['evt_replay'] })))
    expect(json(await replay()).outcomes).toEqual([{ eventId: 'evt_replay', status: 'processed' }])
    expect(json(await replay()).outcomes).toEqual([{ eventId: 'evt_replay', status: 'duplicate' }])
    expect(runs.get('evt_replay')).toBe(1)
    expect((await store.get('evt_replay'))?.status).toBe('replayed')
    expect(audits).toHaveLength(2)
    expect(audits[0]).toMatchObject({
      action: 'replay',
      actor: 'ops',
      outcomes: [{ eventId: 'evt_replay', status: 'processed' }],
    })
    expect(audits[0]?.at).toBeInstanceOf(Date)
    expect(logs).toContain('payhooks board: replay of 1 dead letter(s) by ops: 1 processed')
  })

  it('refuses a state change without a same-origin Origin, JSON, or the CSRF token, and changes nothing', async () => {
    const { board, store, runs } = await setUp()
    await park(store, 'evt_guarded')
    const body = { eventIds: ['evt_guarded'] }
    const refused: Record<string, string>[] = [
      { origin: '' },
      { origin: 'https://evil.example' },
      { origin: 'null' },
      // The whole origin: another scheme or port of the same host is another origin.
      { origin: `http://${HOST}` },
      { origin: `https://${HOST}:8443` },
      { 'sec-fetch-site': 'cross-site' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { [CSRF_HEADER]: '' },
      { [CSRF_HEADER]: 'B'.repeat(43) },
      { cookie: '' },
    ]
    for (const headers of refused) {
      const call = change('/api/dead-letters/replay', body, headers)
      for (const [name, value] of Object.entries(headers)) if (value === '') delete call.headers?.[name]
      const response = await board.handle(request(call))
      expect(response.status, JSON.stringify(headers)).toBe(403)
    }
    expect(runs.size).toBe(0)
    expect(
      (await board.handle(request({ path: '/api/dead-letters/replay', query: 'eventIds=evt_guarded' }))).status,
    ).toBe(404)
    expect((await board.handle(request({ method: 'DELETE', path: '/api/dead-letters/evt_guarded' }))).status).toBe(405)
    expect((await store.get('evt_guarded'))?.status).toBe('parked')
    const other = createBoard({
      webhooks: (await setUp()).webhooks,
      authorize: () => true,
      allowedOrigins: ['https://admin.example'],
    })
    const allowed = await other.handle(
      request(change('/api/dead-letters/delete', body, { origin: 'https://admin.example' })),
    )
    expect(allowed.status).toBe(200)
    const { webhooks } = await setUp()
    for (const listed of ['admin.example', 'https://admin.example/path']) {
      expect(() => createBoard({ webhooks, authorize: () => true, allowedOrigins: [listed] })).toThrow(
        /allowedOrigins must be origins/,
      )
    }
  })

  it('answers a body over MAX_BODY_BYTES 413, with its security headers, only after the checks', async () => {
    const { board } = await setUp()
    const call = { ...change('/api/dead-letters/replay', {}), body: 'x' }
    const tooLarge = { ...request(call), body: () => Promise.reject(new BodyTooLargeError()) }
    const answer = await board.handle(tooLarge)
    expect([answer.status, json(answer)]).toEqual([413, { error: `body over ${MAX_BODY_BYTES} bytes` }])
    expect(answer.headers['content-security-policy']).toBe(CSP)
    const crossSite = {
      ...tooLarge,
      header: (name: string) => (name === 'origin' ? 'https://evil.example' : tooLarge.header(name)),
    }
    expect((await board.handle(crossSite)).status).toBe(403)
  })

  it('read-only: says so, and refuses replay and delete', async () => {
    const { board, store, runs } = await setUp({ readOnly: true })
    await park(store, 'evt_ro')
    expect(json(await board.handle(request({ path: '/api/session' })))).toMatchObject({
      readOnly: true,
      canDelete: false,
    })
    for (const path of ['/api/dead-letters/replay', '/api/dead-letters/delete', '/api/dead-letters/replay-matching']) {
      const response = await board.handle(request(change(path, { eventIds: ['evt_ro'], confirmCount: 1 })))
      expect(response.status).toBe(403)
      expect(json(response).error).toBe('read-only board')
    }
    expect(runs.size).toBe(0)
    expect(await store.get('evt_ro')).toBeDefined()
  })

  it('replays all matching a filter only with the count confirmed, oldest first', async () => {
    const { board, store, runs, audits } = await setUp()
    await park(store, 'evt_a', { code: 'schema_mismatch', at: '2026-11-20T10:00:00Z' })
    await park(store, 'evt_b', { code: 'schema_mismatch', at: '2026-11-20T10:01:00Z' })
    await park(store, 'evt_c', { code: 'handler_failed' })
    const count = json(await board.handle(request({ path: '/api/dead-letters/count', query: 'code=schema_mismatch' })))
    expect(count).toEqual({ count: 2 })
    const stale = await board.handle(
      request(change('/api/dead-letters/replay-matching', { filter: { code: 'schema_mismatch' }, confirmCount: 1 })),
    )
    expect(stale.status).toBe(409)
    expect(json(stale).count).toBe(2)
    expect(runs.size).toBe(0)
    const done = json(
      await board.handle(
        request(change('/api/dead-letters/replay-matching', { filter: { code: 'schema_mismatch' }, confirmCount: 2 })),
      ),
    )
    expect(done.outcomes.map((o: { eventId: string }) => o.eventId)).toEqual(['evt_a', 'evt_b'])
    expect(done).toMatchObject({ total: 2, remaining: 0, cursor: null, run: { tried: 2, processed: 2, failed: 0 } })
    expect([...runs.keys()]).toEqual(['evt_a', 'evt_b'])
    expect(audits[0]).toMatchObject({ action: 'replay_all', filter: { code: 'schema_mismatch' } })
  })

  it('deletes the selected letters, reports those not there, and audits it', async () => {
    const { board, store, audits } = await setUp()
    await park(store, 'evt_del')
    const response = await board.handle(
      request(change('/api/dead-letters/delete', { eventIds: ['evt_del', 'evt_gone'] })),
    )
    expect(json(response)).toEqual({ deleted: ['evt_del'], notFound: ['evt_gone'] })
    expect(await store.get('evt_del')).toBeUndefined()
    expect(audits[0]).toMatchObject({ action: 'delete', actor: 'ops', deleted: ['evt_del'], notFound: ['evt_gone'] })
    for (const eventIds of [[], 'evt_del', [42], undefined]) {
      expect((await board.handle(request(change('/api/dead-letters/delete', { eventIds })))).status).toBe(400)
    }
    expect((await board.handle(request(change('/api/dead-letters/delete', 'not json')))).status).toBe(400)
  })

  it('answers 500 without the error text when the store fails, and logs it', async () => {
    const { board, store, logs } = await setUp()
    store.list = () => {
      throw new Error('connection to postgres://user:pw@db failed')
    }
    const response = await board.handle(request({ path: '/api/dead-letters' }))
    expect(response.status).toBe(500)
    expect(String(response.body)).not.toContain('postgres')
    expect(logs.some((line) => line.includes('failed'))).toBe(true)
  })

  it('shows the overview: parked letters by code, and health() when the receiver has it', async () => {
    const { board, store, webhooks } = await setUp()
    await park(store, 'evt_o1', { code: 'schema_mismatch' })
    await park(store, 'evt_o2')
    const overview = json(await board.handle(request({ path: '/api/overview' })))
    expect(overview.deadLetters).toEqual({
      parked: 2,
      byCode: { schema_mismatch: 1, handler_failed: 1, stale_event: 0, paused: 0 },
      durable: false,
    })
    // A store without count: counted by paging through the list.
    const { count: _, ...paging } = webhooks.deadLetters
    const pagingBoard = createBoard({ webhooks: { deadLetters: paging }, authorize: () => true })
    const paged = json(await pagingBoard.handle(request({ path: '/api/overview' })))
    expect(paged.deadLetters).toMatchObject({ parked: 2, byCode: { schema_mismatch: 1, handler_failed: 1 } })
    // A store with its own count: parked counts come from it, not from paging through the list.
    const counted: unknown[] = []
    const counting = createBoard({
      webhooks: {
        deadLetters: {
          ...webhooks.deadLetters,
          list: () => Promise.reject(new Error('paged instead of counted')),
          count: async (query?: DeadLetterCountQuery) => {
            counted.push(query)
            return query?.code === 'handler_failed' ? 7 : 0
          },
        },
      },
      authorize: () => true,
    })
    const fromCount = json(await counting.handle(request({ path: '/api/overview' })))
    expect(fromCount.deadLetters).toMatchObject({ parked: 7, byCode: { handler_failed: 7 } })
    expect(counted).toContainEqual({ code: 'handler_failed', status: 'parked' })
    const withHealth = Object.assign(Object.create(webhooks), {
      deadLetters: webhooks.deadLetters,
      health: async () => ({
        ready: false,
        checks: [{ name: 'store', ok: false, detail: 'no answer', fix: 'start Redis', url: 'redis://:pw@h' }],
      }),
    })
    const healthy = createBoard({ webhooks: withHealth, authorize: () => true })
    const answer = await healthy.handle(request({ path: '/api/overview' }))
    expect(json(answer).health).toEqual({
      ready: false,
      checks: [{ name: 'store', ok: false, detail: 'no answer', fix: 'start Redis' }],
    })
    expect(String(answer.body)).not.toContain('pw@h')
  })

  it('shares one gathering of the overview between the loads of one second (three operators reloading it)', async () => {
    const { webhooks } = await setUp()
    let counts = 0
    const counting = Object.assign(Object.create(webhooks), {
      deadLetters: {
        ...webhooks.deadLetters,
        count: async () => {
          counts++
          return 4
        },
      },
    })
    const board = createBoard({ webhooks: counting, authorize: () => true })
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      const loads = await Promise.all([1, 2, 3].map(() => board.handle(request({ path: '/api/overview' }))))
      expect(loads.map((answer) => json(answer).deadLetters.parked)).toEqual([16, 16, 16])
      expect(counts).toBe(4) // one count per code, once
      vi.advanceTimersByTime(999)
      await board.handle(request({ path: '/api/overview' }))
      expect(counts).toBe(4)
      vi.advanceTimersByTime(1)
      await board.handle(request({ path: '/api/overview' }))
      expect(counts).toBe(8)
    } finally {
      vi.useRealTimers()
    }
  })

  it('gathers each overview panel on its own: a failing or hanging store leaves health and this instance showing', async () => {
    const { webhooks } = await setUp()
    const health = async () => ({ ready: false, checks: [{ name: 'dead_letter_redis', ok: false, detail: 'down' }] })
    const failing = Object.assign(Object.create(webhooks), {
      deadLetters: { ...webhooks.deadLetters, count: () => Promise.reject(new Error('connect redis://:pw@10.0.0.9')) },
      health,
    })
    const answer = await createBoard({ webhooks: failing, authorize: () => true }).handle(
      request({ path: '/api/overview' }),
    )
    expect(answer.status).toBe(200)
    const body = json(answer)
    expect(body.deadLetters).toBeNull()
    expect(body.failed).toEqual({ deadLetters: 'could not be gathered' })
    expect(body.health).toMatchObject({ ready: false, checks: [{ name: 'dead_letter_redis', detail: 'down' }] })
    expect(body.instance).toMatchObject({ inFlight: 0 })
    expect(String(answer.body)).not.toContain('pw@')

    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] })
    try {
      const hanging = Object.assign(Object.create(webhooks), {
        deadLetters: { ...webhooks.deadLetters, count: () => new Promise(() => {}) },
        health,
      })
      const pending = createBoard({ webhooks: hanging, authorize: () => true }).handle(
        request({ path: '/api/overview' }),
      )
      await vi.advanceTimersByTimeAsync(2_000)
      const late = json(await pending)
      expect(late.failed).toEqual({ deadLetters: 'no answer within 2000 ms' })
      expect(late.health.ready).toBe(false)
      expect(late.instance).not.toBeNull()
    } finally {
      vi.useRealTimers()
    }
  })
})
