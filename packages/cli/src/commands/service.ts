import type { PayhooksClient, ResellerClient, Subscription, SubscriptionInput } from '@payhooks/client'
import { knownEventTypes } from '@payhooks/core'
import { defaultSandboxCredentials } from '@payhooks/sandbox'
import { call, connect } from '../connection.js'
import { type Context, integerValue, out, printJson, requireString, stringValue, UsageError, warn } from '../context.js'
import { ALLOW_UNKNOWN, allowUnknownOption, checkEventTypes } from '../event-types.js'
import { keyValues, table } from '../format.js'
import type { CommandSpec } from '../spec.js'

/** `--event-type a --event-type b,c` → `['a', 'b', 'c']`, checked against the spec's names. */
function eventTypes(ctx: Context): string[] | undefined {
  const raw = ctx.values['event-type']
  if (raw === undefined) return undefined
  const list = (Array.isArray(raw) ? raw : [raw])
    .flatMap((item) => String(item).split(','))
    .map((item) => item.trim())
    .filter((item) => item !== '')
  if (list.length === 0) throw new UsageError('--event-type needs at least one event type')
  checkEventTypes(ctx, list)
  return list
}

function activeFlag(ctx: Context): boolean | undefined {
  const active = ctx.values.active === true
  const inactive = ctx.values.inactive === true
  if (active && inactive) throw new UsageError('--active and --inactive exclude each other')
  return active ? true : inactive ? false : undefined
}

function showSubscription(subscription: Subscription): string {
  return keyValues(subscription)
}

const list: CommandSpec = {
  name: ['subscriptions', 'list'],
  usage: '[options]',
  summary: 'List webhook subscriptions',
  details: ['With a reseller key and no --merchant, lists the reseller-level subscriptions.'],
  examples: ['payhooks subscriptions list', 'payhooks subscriptions list --merchant 1234 --json'],
  options: {},
  service: true,
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const { client } = connect(ctx)
    const answer = await call(() => client.subscriptions.list())
    if (ctx.json) {
      printJson(ctx, answer)
      return 0
    }
    if (answer.data.length === 0) {
      out(ctx, `No subscriptions (total_item_count ${answer.total_item_count}).`)
      return 0
    }
    const rows = answer.data.map((s) => [s.id, s.url, s.event_types.join(','), s.is_active ? 'yes' : 'no'])
    out(ctx, table(['ID', 'URL', 'EVENT TYPES', 'ACTIVE'], rows))
    out(ctx, `${answer.data.length} of ${answer.total_item_count} subscription(s)`)
    return 0
  },
}

const get: CommandSpec = {
  name: ['subscriptions', 'get'],
  usage: '<id> [options]',
  summary: 'Show one subscription, signature_secret included',
  examples: ['payhooks subscriptions get whs_123'],
  options: {},
  service: true,
  positionals: { min: 1, max: 1, name: '<id>' },
  async run(ctx) {
    const { client } = connect(ctx)
    const id = ctx.positionals[0] as string
    const subscription = await call(() => client.subscriptions.get(id))
    if (ctx.json) printJson(ctx, subscription)
    else out(ctx, showSubscription(subscription))
    return 0
  },
}

const create: CommandSpec = {
  name: ['subscriptions', 'create'],
  usage: '--url <url> --event-type <type>... [--inactive] [--all-merchants] [options]',
  summary: 'Create a subscription and print its id and signature_secret',
  details: [
    'With a reseller key and no --merchant the subscription covers ALL of your merchants: say so with',
    '--all-merchants (it is refused otherwise). merchant_activated_for_payment_type is reseller scoped.',
    `Event types the spec names: ${knownEventTypes.join(', ')}. Others are refused`,
    `unless --${ALLOW_UNKNOWN} is given: a misspelt type would silently never deliver.`,
  ],
  examples: [
    'payhooks subscriptions create --merchant 1234 --url https://shop.example.com/webhooks \\\n    --event-type transaction_settled --event-type transaction_returned',
    'payhooks subscriptions create --all-merchants --url https://partner.example.com/hooks \\\n    --event-type merchant_activated_for_payment_type',
  ],
  options: {
    url: { type: 'string', arg: '<url>', help: 'endpoint that receives the messages (required)' },
    'event-type': {
      type: 'string',
      multiple: true,
      arg: '<type>',
      help: 'event type to deliver; repeat it or separate with commas (required)',
    },
    inactive: { type: 'boolean', help: 'create with is_active false (no deliveries yet)' },
    'all-merchants': {
      type: 'boolean',
      help: 'reseller key only: subscribe for all merchants (no Service-Merchant-Id)',
    },
    [ALLOW_UNKNOWN]: allowUnknownOption,
  },
  service: true,
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const connection = connect(ctx)
    const allMerchants = ctx.values['all-merchants'] === true
    const input: SubscriptionInput = {
      url: requireString(ctx, 'url'),
      event_types: eventTypes(ctx) ?? [],
      is_active: ctx.values.inactive !== true,
    }
    if (input.event_types.length === 0) throw new UsageError('--event-type is required')
    let created: Awaited<ReturnType<typeof connection.client.subscriptions.create>>
    if (connection.reseller) {
      if (!allMerchants) {
        throw new UsageError(
          'with a reseller key and no --merchant (PAYHOOKS_MERCHANT_ID) this subscription would cover ALL your merchants: add --all-merchants if that is meant, or pass --merchant <id>',
        )
      }
      created = await call(() => connection.client.subscriptions.create(input, { scope: 'reseller' }))
    } else {
      if (allMerchants) {
        throw new UsageError('--all-merchants needs a reseller key and no --merchant (PAYHOOKS_MERCHANT_ID)')
      }
      created = await call(() => connection.client.subscriptions.create(input))
    }
    if (ctx.json) printJson(ctx, created)
    else out(ctx, keyValues(created))
    return 0
  },
}

const update: CommandSpec = {
  name: ['subscriptions', 'update'],
  usage: '<id> [--url <url>] [--event-type <type>...] [--active | --inactive] [options]',
  summary: 'Change a subscription',
  details: [
    'The service replaces url, event_types and is_active together; fields you leave out are read',
    'first (one GET) and sent back unchanged. signature_secret is never sent.',
  ],
  examples: [
    'payhooks subscriptions update whs_123 --inactive',
    'payhooks subscriptions update whs_123 --url https://new.example.com/h',
  ],
  options: {
    url: { type: 'string', arg: '<url>', help: 'new endpoint' },
    'event-type': { type: 'string', multiple: true, arg: '<type>', help: 'new event types (replace the list)' },
    active: { type: 'boolean', help: 'deliver messages (is_active true)' },
    inactive: { type: 'boolean', help: 'stop delivering (is_active false)' },
    [ALLOW_UNKNOWN]: allowUnknownOption,
  },
  service: true,
  positionals: { min: 1, max: 1, name: '<id>' },
  async run(ctx) {
    const id = ctx.positionals[0] as string
    const changes = { url: stringValue(ctx, 'url'), event_types: eventTypes(ctx), is_active: activeFlag(ctx) }
    if (Object.values(changes).every((value) => value === undefined)) {
      throw new UsageError('nothing to change: give --url, --event-type, --active or --inactive')
    }
    const { client } = connect(ctx)
    let input: SubscriptionInput
    if (changes.url !== undefined && changes.event_types !== undefined && changes.is_active !== undefined) {
      input = { url: changes.url, event_types: changes.event_types, is_active: changes.is_active }
    } else {
      const current = await call(() => client.subscriptions.get(id))
      input = {
        url: changes.url ?? current.url,
        event_types: changes.event_types ?? current.event_types,
        is_active: changes.is_active ?? current.is_active,
      }
    }
    await call(() => client.subscriptions.update(id, input))
    if (ctx.json) printJson(ctx, { id, ...input })
    else out(ctx, `Updated ${id}\n${keyValues(input)}`)
    return 0
  },
}

const remove: CommandSpec = {
  name: ['subscriptions', 'delete'],
  usage: '<id> [options]',
  summary: 'Delete a subscription',
  examples: ['payhooks subscriptions delete whs_123'],
  options: {},
  service: true,
  positionals: { min: 1, max: 1, name: '<id>' },
  async run(ctx) {
    const { client } = connect(ctx)
    const id = ctx.positionals[0] as string
    await call(() => client.subscriptions.delete(id))
    if (ctx.json) printJson(ctx, { id, deleted: true })
    else out(ctx, `Deleted ${id}`)
    return 0
  },
}

const resend: CommandSpec = {
  name: ['resend'],
  usage: '<id>... [options]',
  summary: 'Ask the service to send webhooks again',
  details: ['The ids are sent as given: the spec does not say whether they are event ids or others.'],
  examples: ['payhooks resend evt_1 evt_2 --merchant 1234'],
  options: {},
  service: true,
  positionals: { min: 1, max: Number.POSITIVE_INFINITY, name: '<id>' },
  async run(ctx) {
    const { client } = connect(ctx)
    const ids = ctx.positionals
    await call(() => client.webhooks.resend(ids))
    if (ctx.json) printJson(ctx, { ids, resent: true })
    else out(ctx, `Asked the service to resend ${ids.length} webhook(s): ${ids.join(', ')}`)
    return 0
  },
}

/** Which secret signed a test message, as far as the caller's subscriptions tell. */
type Signer =
  | { signed_with: 'subscription'; subscription_id: string }
  | { signed_with: 'test_secret' }
  | { signed_with: 'unknown'; reason: string }

/**
 * The sandbox signs a test message with the signature_secret of the caller's first subscription whose
 * url is exactly the test's url, else with its test secret; one list call tells which applies.
 */
async function testSigner(client: PayhooksClient | ResellerClient, url: string): Promise<Signer> {
  try {
    const { data, total_item_count } = await client.subscriptions.list()
    const match = data.find((subscription) => subscription.url === url)
    if (match) return { signed_with: 'subscription', subscription_id: match.id }
    if (data.length < total_item_count) {
      return { signed_with: 'unknown', reason: `the list showed ${data.length} of ${total_item_count} subscriptions` }
    }
    return { signed_with: 'test_secret' }
  } catch (error) {
    return {
      signed_with: 'unknown',
      reason: (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '',
    }
  }
}

const TEST_SECRET = defaultSandboxCredentials.testSecret

function signerLine(signer: Signer): string {
  if (signer.signed_with === 'subscription') {
    return `Signed with the signature_secret of subscription ${signer.subscription_id}, yours for this url`
  }
  if (signer.signed_with === 'test_secret') {
    return `Signed with the test secret ("${TEST_SECRET}" in the payhooks sandbox unless started with another): none of your subscriptions has this url`
  }
  return `Could not tell which secret signed it (${signer.reason})`
}

function unauthorizedHint(signer: Signer, url: string): string {
  const start = 'hint: the target answered 401, so its signature check probably failed:'
  if (signer.signed_with === 'subscription') {
    const id = signer.subscription_id
    return `${start} it must verify with the signature_secret of subscription ${id} (see payhooks subscriptions get ${id})`
  }
  if (signer.signed_with === 'test_secret') {
    return `${start} the message was signed with the test secret, not a subscription's; subscribe ${url} first (payhooks subscriptions create --url ${url} ...) so tests are signed with its signature_secret, or have the receiver also accept the test secret`
  }
  return `${start} it must verify with the signature_secret of your subscription for this url, or the test secret when there is none`
}

const testEvent: CommandSpec = {
  name: ['test-event'],
  usage: '--url <url> --event-type <type> [options]',
  summary: 'Have the service post one test message to a url (sandbox environment)',
  details: [
    'Prints the status the target answered to the service, and which secret signed the message;',
    'exits 1 when it was not 2XX. The payhooks sandbox signs with the signature_secret of your',
    `subscription for exactly this url, else with its test secret ("${TEST_SECRET}" by default); the`,
    'spec does not say which the service uses. One subscriptions list call, after the test, tells which.',
    'The merchant_activated_for_payment_type test needs a reseller key and no --merchant.',
  ],
  examples: ['payhooks test-event --url https://shop.example.com/webhooks --event-type transaction_settled'],
  options: {
    url: { type: 'string', arg: '<url>', help: 'where the service posts the message (required)' },
    'event-type': { type: 'string', arg: '<type>', help: 'event type of the message (required)' },
    [ALLOW_UNKNOWN]: allowUnknownOption,
  },
  service: true,
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const url = requireString(ctx, 'url')
    const eventType = requireString(ctx, 'event-type')
    checkEventTypes(ctx, [eventType])
    const { client } = connect(ctx)
    const result = await call(() => client.webhooks.sendTest({ url, eventType }))
    const signer = await testSigner(client, url)
    if (ctx.json) printJson(ctx, { ...result, ...signer })
    else out(ctx, `The target answered ${result.status_code} to the test ${eventType} message\n${signerLine(signer)}`)
    if (result.status_code === 401) warn(ctx, unauthorizedHint(signer, url))
    return result.status_code >= 200 && result.status_code <= 299 ? 0 : 1
  },
}

const token: CommandSpec = {
  name: ['token'],
  usage: '--merchant <id> [options]',
  summary: 'Obtain a client token for a merchant, with the reseller key',
  details: ['Server side only: the request carries the reseller key. Never hand the key to a browser.'],
  examples: ['PAYHOOKS_RESELLER_KEY="12|..." payhooks token --merchant 1234 --json'],
  options: {},
  service: true,
  positionals: { min: 0, max: 0 },
  async run(ctx) {
    const merchantId = integerValue(ctx, 'merchant', {
      min: 1,
      max: Number.MAX_SAFE_INTEGER,
      envName: 'PAYHOOKS_MERCHANT_ID',
    })
    if (merchantId === undefined) throw new UsageError('--merchant is required (or set PAYHOOKS_MERCHANT_ID)')
    const { client } = connect(ctx)
    const answer = await call(() => client.auth.clientToken({ merchantId }))
    if (ctx.json) printJson(ctx, answer)
    else out(ctx, keyValues(answer))
    return 0
  },
}

export const serviceCommands = [list, get, create, update, remove, resend, testEvent, token]
