// The CLI against a recording server standing in for the service: subscriptions, resend, test-event, token, and
// how it fails when the service says no or cannot be reached.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { API_KEY, oneLine, RESELLER_KEY, USERNAME } from '../fixtures/cli-helpers.js'
import { assertBuilt, runCli } from '../fixtures/cli-run.js'
import { type RecordingServer, rawHeader, startRecordingServer } from '../fixtures/client-recording-server.js'

beforeAll(() => assertBuilt())

describe('service commands against a recording server', () => {
  let server: RecordingServer
  const subscription = {
    id: 'whs_cli_1',
    url: 'https://shop.example.com/webhooks',
    event_types: ['transaction_settled'],
    is_active: true,
    signature_secret: 'whsec_from_service',
  }
  const resellerEnv = () => ({ PAYHOOKS_BASE_URL: server.url, PAYHOOKS_RESELLER_KEY: RESELLER_KEY })
  const merchantFlags = () => ['--base-url', server.url, '--username', USERNAME, '--api-key', API_KEY]

  beforeAll(async () => {
    server = await startRecordingServer()
  })
  afterAll(() => server.close())
  afterEach(() => {
    server.requests.length = 0
  })

  it('subscriptions list: reseller key and merchant id from the environment, table and --json output', async () => {
    const answer = { total_item_count: 2, data: [subscription, { ...subscription, id: 'whs_cli_2', is_active: false }] }
    server.respond(() => ({ status: 200, body: answer }))
    const env = { ...resellerEnv(), PAYHOOKS_MERCHANT_ID: '1234' }
    const table = await runCli(['subscriptions', 'list'], { env })
    expect(table.code).toBe(0)
    expect(table.stdout).toMatch(/^ID\s+URL\s+EVENT TYPES\s+ACTIVE$/m)
    expect(table.stdout).toMatch(/^whs_cli_2\s+https:\/\/shop\.example\.com\/webhooks\s+transaction_settled\s+no$/m)
    expect(table.stdout).toContain('2 of 2 subscription(s)')

    const json = await runCli(['subscriptions', 'list', '--json'], { env })
    expect(JSON.parse(json.stdout)).toEqual(answer)
    for (const request of server.requests) {
      expect([request.method, request.path]).toEqual(['GET', '/ps/webhook/subscriptions'])
      expect(rawHeader(request, 'authorization')).toEqual([`reseller ${RESELLER_KEY}`])
      expect(rawHeader(request, 'service-merchant-id')).toEqual(['1234'])
    }
    expect(server.requests).toHaveLength(2)
  })

  it('subscriptions create with merchant credentials sends basic auth and prints id and signature_secret', async () => {
    server.respond(() => ({ status: 200, body: { data: { id: 'whs_new', signature_secret: 'whsec_new' } } }))
    const args = ['subscriptions', 'create', ...merchantFlags(), '--url', 'https://shop.example.com/h']
    const result = await runCli([
      ...args,
      '--event-type',
      'transaction_settled,transaction_returned',
      '--inactive',
      '--json',
    ])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ id: 'whs_new', signature_secret: 'whsec_new' })
    const [request] = server.requests
    expect(rawHeader(request!, 'authorization')).toEqual([`basic ${USERNAME}:${API_KEY}`])
    expect(rawHeader(request!, 'service-merchant-id')).toEqual([])
    expect(JSON.parse(request!.body)).toEqual({
      url: 'https://shop.example.com/h',
      event_types: ['transaction_settled', 'transaction_returned'],
      is_active: false,
    })
  })

  it('subscriptions create with a reseller key and no merchant needs --all-merchants', async () => {
    server.respond(() => ({ status: 200, body: { data: { id: 'whs_all', signature_secret: 's' } } }))
    const args = [
      'subscriptions',
      'create',
      '--url',
      'https://p.example.com/h',
      '--event-type',
      'merchant_activated_for_payment_type',
    ]
    const refused = await runCli(args, { env: resellerEnv() })
    expect(refused.code).toBe(2)
    expect(oneLine(refused.stderr)).toMatch(/ALL your merchants: add --all-merchants/)
    expect(server.requests).toHaveLength(0)

    const created = await runCli([...args, '--all-merchants'], { env: resellerEnv() })
    expect(created.code).toBe(0)
    expect(created.stdout).toMatch(/^id\s+whs_all$/m)
    expect(server.requests).toHaveLength(1)
    expect(rawHeader(server.requests[0]!, 'service-merchant-id')).toEqual([])

    const conflicting = await runCli([...args, '--all-merchants', '--merchant', '5'], { env: resellerEnv() })
    expect(conflicting.code).toBe(2)
    expect(server.requests).toHaveLength(1)
  })

  it('flags take precedence over the environment, credentials as a whole', async () => {
    server.respond(() => ({ status: 200, body: { total_item_count: 0, data: [] } }))
    const env = { PAYHOOKS_BASE_URL: server.url, PAYHOOKS_USERNAME: 'env_user', PAYHOOKS_API_KEY: 'env_key' }
    const result = await runCli(['subscriptions', 'list', '--reseller-key', RESELLER_KEY, '--merchant', '9'], { env })
    expect(result.code).toBe(0)
    expect(rawHeader(server.requests[0]!, 'authorization')).toEqual([`reseller ${RESELLER_KEY}`])
    expect(rawHeader(server.requests[0]!, 'service-merchant-id')).toEqual(['9'])
  })

  it('subscriptions update reads the fields it is not given and sends them back without the secret', async () => {
    server.respond((request) =>
      request.method === 'GET' ? { status: 200, body: { data: subscription } } : { status: 204 },
    )
    const result = await runCli(['subscriptions', 'update', 'whs_cli_1', '--inactive', '--json', ...merchantFlags()])
    expect(result.code).toBe(0)
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /ps/webhook/subscription/whs_cli_1',
      'PUT /ps/webhook/subscription/whs_cli_1',
    ])
    const sent = { url: subscription.url, event_types: subscription.event_types, is_active: false }
    expect(JSON.parse(server.requests[1]!.body)).toEqual(sent)
    expect(JSON.parse(result.stdout)).toEqual({ id: 'whs_cli_1', ...sent })
  })

  it('subscriptions get and delete', async () => {
    server.respond((request) =>
      request.method === 'GET' ? { status: 200, body: { data: subscription } } : { status: 204 },
    )
    const got = await runCli(['subscriptions', 'get', 'whs_cli_1', ...merchantFlags()])
    expect(got.code).toBe(0)
    expect(got.stdout).toMatch(/^signature_secret\s+whsec_from_service$/m)
    const deleted = await runCli(['subscriptions', 'delete', 'whs_cli_1', ...merchantFlags(), '--json'])
    expect(deleted.code).toBe(0)
    expect(JSON.parse(deleted.stdout)).toEqual({ id: 'whs_cli_1', deleted: true })
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /ps/webhook/subscription/whs_cli_1',
      'DELETE /ps/webhook/subscription/whs_cli_1',
    ])
  })

  it('resend sends the ids; test-event exits 1 when the target did not answer 2XX', async () => {
    server.respond((request) =>
      request.path.endsWith('manually_resend_webhooks')
        ? { status: 204 }
        : request.method === 'GET'
          ? { status: 200, body: { total_item_count: 0, data: [] } }
          : {
              status: 200,
              body: {
                data: { status_code: JSON.parse(request.body).event_type === 'transaction_settled' ? 200 : 500 },
              },
            },
    )
    const env = { ...resellerEnv(), PAYHOOKS_MERCHANT_ID: '1234' }
    const resent = await runCli(['resend', 'evt_1', 'evt_2'], { env })
    expect(resent.code).toBe(0)
    expect(JSON.parse(server.requests[0]!.body)).toEqual({ ids: ['evt_1', 'evt_2'] })

    const ok = await runCli(
      ['test-event', '--url', 'https://x.example/h', '--event-type', 'transaction_settled', '--json'],
      {
        env,
      },
    )
    expect([ok.code, JSON.parse(ok.stdout)]).toEqual([0, { status_code: 200, signed_with: 'test_secret' }])
    expect(JSON.parse(server.requests[1]!.body)).toEqual({
      url: 'https://x.example/h',
      event_type: 'transaction_settled',
    })
    const failing = await runCli(
      ['test-event', '--url', 'https://x.example/h', '--event-type', 'transaction_returned'],
      {
        env,
      },
    )
    expect(failing.code).toBe(1)
    expect(failing.stdout).toContain('answered 500')
  })

  it.each([
    [['subscriptions', 'create', '--url', 'https://shop.example.com/h', '--event-type', 'transaction_setled']],
    [['subscriptions', 'update', 'whs_cli_1', '--event-type', 'transaction_settled,Transaction_Returned']],
    [['test-event', '--url', 'https://shop.example.com/h', '--event-type', 'transaction_setled']],
  ])('refuses an event type the spec does not name, with a hint, unless allowed: %j', async (args) => {
    server.respond((request) =>
      request.method === 'GET' && request.path.endsWith('/subscriptions')
        ? { status: 200, body: { total_item_count: 0, data: [] } }
        : request.method === 'GET'
          ? { status: 200, body: { data: subscription } }
          : request.method === 'PUT'
            ? { status: 204 }
            : request.path.endsWith('/test')
              ? { status: 200, body: { data: { status_code: 200 } } }
              : { status: 200, body: { data: { id: 'whs_new', signature_secret: 'whsec_new' } } },
    )
    const refused = await runCli([...args, ...merchantFlags()])
    expect(refused.code).toBe(2)
    const line = oneLine(refused.stderr)
    expect(line).toMatch(/ is not one the spec names \(did you mean transaction_(settled|returned)\?\): it names /)
    expect(line).toContain('pass --allow-unknown-event-type to send it anyway')
    expect(server.requests).toHaveLength(0)

    const allowed = await runCli([...args, ...merchantFlags(), '--allow-unknown-event-type', '--json'])
    expect([allowed.code, allowed.stderr]).toEqual([0, ''])
    const sent = server.requests.find((r) => r.method !== 'GET')
    expect(sent).toBeDefined()
    const body = JSON.parse(sent!.body) as { event_types?: string[]; event_type?: string }
    expect(body.event_types ?? [body.event_type]).toEqual(
      args.includes('update') ? ['transaction_settled', 'Transaction_Returned'] : ['transaction_setled'],
    )
  })

  it('test-event says which secret signed the message, and hints at it when the target answered 401', async () => {
    const mine = { ...subscription, id: 'whs_for_url', url: 'https://shop.example.com/hook' }
    let targetStatus = 200
    server.respond((request) =>
      request.method === 'GET'
        ? { status: 200, body: { total_item_count: 2, data: [subscription, mine] } }
        : { status: 200, body: { data: { status_code: targetStatus } } },
    )
    const test = (url: string, ...extra: string[]) =>
      runCli(['test-event', '--url', url, '--event-type', 'transaction_settled', ...merchantFlags(), ...extra])

    const bySubscription = await test(mine.url)
    expect(bySubscription.code).toBe(0)
    expect(bySubscription.stdout).toBe(
      'The target answered 200 to the test transaction_settled message\nSigned with the signature_secret of subscription whs_for_url, yours for this url\n',
    )
    expect(bySubscription.stderr).toBe('')
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      'POST /ps/webhook/subscription/test',
      'GET /ps/webhook/subscriptions',
    ])

    targetStatus = 401
    const rejected = await test(mine.url, '--json')
    expect(rejected.code).toBe(1)
    expect(JSON.parse(rejected.stdout)).toEqual({
      status_code: 401,
      signed_with: 'subscription',
      subscription_id: 'whs_for_url',
    })
    expect(oneLine(rejected.stderr)).toBe(
      'payhooks test-event: hint: the target answered 401, so its signature check probably failed: it must verify with the signature_secret of subscription whs_for_url (see payhooks subscriptions get whs_for_url)',
    )

    const byTestSecret = await test('https://elsewhere.example.com/h')
    expect(byTestSecret.code).toBe(1)
    expect(byTestSecret.stdout).toContain(
      'Signed with the test secret ("sandbox-test-secret" in the payhooks sandbox unless started with another): none of your subscriptions has this url',
    )
    expect(oneLine(byTestSecret.stderr)).toMatch(
      /hint: .* signed with the test secret, not a subscription's; subscribe https:\/\/elsewhere\.example\.com\/h first \(payhooks subscriptions create --url https:\/\/elsewhere\.example\.com\/h \.\.\.\)/,
    )

    targetStatus = 200
    server.respond((request) =>
      request.method === 'GET'
        ? { status: 403, body: 'not allowed' }
        : { status: 200, body: { data: { status_code: targetStatus } } },
    )
    const unknown = await test(mine.url)
    expect(unknown.code).toBe(0)
    expect(unknown.stdout).toMatch(/^Could not tell which secret signed it \(subscriptions\.list: .*answered 403/m)
  })

  it('token posts the merchant and the reseller key and prints the expiry', async () => {
    server.respond(() => ({ status: 200, body: { data: { token: 'eyJ.cli.jwt', expires: '2026-11-02T16:00:00Z' } } }))
    const result = await runCli(['token', '--merchant', '1234', '--json'], { env: resellerEnv() })
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({ token: 'eyJ.cli.jwt', expires: '2026-11-02T16:00:00.000Z' })
    expect(server.requests[0]!.path).toBe('/ps/auth/reseller_client_token')
    expect(JSON.parse(server.requests[0]!.body)).toEqual({ client_id: 1234, api_key: RESELLER_KEY })
  })

  it('exits 1 with one redacted line when the service says no', async () => {
    server.respond((request) => ({ status: 401, body: `invalid credentials ${request.headers.authorization}` }))
    const result = await runCli(['subscriptions', 'list', '--merchant', '1'], { env: resellerEnv() })
    expect(result.code).toBe(1)
    const line = oneLine(result.stderr)
    expect(line).toMatch(
      /^payhooks subscriptions list: GET \/ps\/webhook\/subscriptions answered 401 Unauthorized \(the service refused the credentials\): /,
    )
    expect(line).toContain('[redacted]')
    expect(result.stderr + result.stdout).not.toContain(RESELLER_KEY.split('|')[1])
  })

  it('exits 1 when the service cannot be reached', async () => {
    const closed = await startRecordingServer()
    await closed.close()
    const result = await runCli([
      'subscriptions',
      'list',
      '--base-url',
      closed.url,
      '--username',
      'u',
      '--api-key',
      'k',
    ])
    expect(result.code).toBe(1)
    expect(oneLine(result.stderr)).toMatch(/ECONNREFUSED/)
  })
})
