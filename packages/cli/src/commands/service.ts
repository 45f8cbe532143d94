import { call, connect } from '../connection.js'
import { integerValue, out, printJson, UsageError } from '../context.js'
import { keyValues } from '../format.js'
import type { CommandSpec } from '../spec.js'
import { subscriptionCommands } from './subscriptions.js'
import { testEvent } from './test-event.js'

const resend: CommandSpec = {
  name: ['resend'],
  usage: '<id>... [options]',
  summary: 'Ask the service to send webhooks again',
  details: [
    'The ids are sent as given: the spec does not say whether they are event ids or others.',
    'Ask in the scope of the subscription the events went to: no --merchant for one made with --all-merchants, --merchant <id> for one made for that merchant. A 404 says which subscriptions were searched.',
  ],
  examples: ['payhooks resend evt_1 evt_2', 'payhooks resend evt_1 evt_2 --merchant 1234'],
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

export const serviceCommands = [...subscriptionCommands, resend, testEvent, token]
