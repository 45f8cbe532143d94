import type { PayhooksClient, ResellerClient } from '@payhooks/client'
import { defaultSandboxCredentials } from '@payhooks/sandbox'
import { call, connect } from '../connection.js'
import { out, printJson, requireString, warn } from '../context.js'
import { ALLOW_UNKNOWN, allowUnknownOption, checkEventTypes } from '../event-types.js'
import type { CommandSpec } from '../spec.js'

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

export const testEvent: CommandSpec = {
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
