import type { Subscription, SubscriptionInput } from '@payhooks/client'
import { knownEventTypes } from '@payhooks/core'
import { call, connect } from '../connection.js'
import { out, printJson, requireString, stringValue, UsageError } from '../context.js'
import { ALLOW_UNKNOWN, allowUnknownOption } from '../event-types.js'
import { keyValues, table } from '../format.js'
import type { CommandSpec } from '../spec.js'
import { activeFlag, eventTypes } from './subscription-flags.js'

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

export const subscriptionCommands = [list, get, create, update, remove]
