// The service's own endpoints (spec section 4), each authenticated first (section 5), so a bad key
// is a 401 whatever the body holds.
import { authenticate, type Caller } from './auth.js'
import { SandboxHttpError } from './errors.js'
import {
  type Call,
  eventIdsField,
  header,
  json,
  merchantIdField,
  noContent,
  ok,
  type RouteTable,
  type SandboxCore,
} from './routing.js'
import { parseSubscriptionBody, resourceOf } from './subscriptions.js'
import { checkTargetUrl } from './targets.js'

function callerOf(core: SandboxCore, call: Call): Caller {
  return authenticate(
    core.credentials,
    header(call.request, 'authorization'),
    header(call.request, 'service-merchant-id'),
  )
}

export const serviceRoutes: RouteTable = {
  '/ps/webhook/subscription': {
    POST(core, call) {
      const caller = callerOf(core, call)
      const subscription = core.store.create(caller, parseSubscriptionBody(json(call), false))
      return ok({ data: { id: subscription.id, signature_secret: subscription.signature_secret } })
    },
  },
  '/ps/webhook/subscription/test': {
    async POST(core, call) {
      const caller = callerOf(core, call)
      const body = json(call)
      const url = checkTargetUrl(body.url)
      if (typeof body.event_type !== 'string' || body.event_type.trim() === '') {
        throw new SandboxHttpError(400, 'event_type must be a non-empty string')
      }
      const result = await core.sendTest(caller, url, body.event_type)
      if (result.refused) {
        throw new SandboxHttpError(400, 'url must not resolve to a link-local or cloud metadata address')
      }
      // Never the network error itself: its text (refused, reset, timed out) would make a port scanner.
      if (result.status === undefined) throw new SandboxHttpError(502, 'test webhook: the target did not answer')
      return ok({ data: { status_code: result.status } })
    },
  },
  '/ps/webhook/subscription/': {
    PUT(core, call) {
      const caller = callerOf(core, call)
      core.store.owned(caller, call.param)
      core.store.update(caller, call.param, parseSubscriptionBody(json(call), true))
      return noContent
    },
    GET(core, call) {
      return ok({ data: resourceOf(core.store.owned(callerOf(core, call), call.param)) })
    },
    DELETE(core, call) {
      core.store.delete(callerOf(core, call), call.param)
      core.subscriptionDeleted(call.param)
      return noContent
    },
  },
  '/ps/webhook/subscriptions': {
    GET(core, call) {
      const data = core.store.listOwned(callerOf(core, call)).map(resourceOf)
      return ok({ total_item_count: data.length, data })
    },
  },
  '/ps/webhook/manually_resend_webhooks': {
    async PUT(core, call) {
      const caller = callerOf(core, call)
      const ids = eventIdsField(json(call).ids)
      const owned = (subscription: { id: string }) => core.store.isOwnedBy(caller, subscription.id)
      const unknown = ids.filter((id) => !core.engine.hasDeliveries(id, owned))
      if (unknown.length > 0) {
        const searched =
          caller.kind === 'reseller' && caller.merchantId === undefined
            ? "the reseller's own subscriptions (those for all its merchants)"
            : `the subscriptions of merchant ${caller.merchantId}`
        throw new SandboxHttpError(404, `no event delivered to ${searched} with id ${unknown.join(', ')}`)
      }
      await Promise.all(ids.map((id) => core.engine.resend(id, owned)))
      return noContent
    },
  },
  '/ps/auth/reseller_client_token': {
    POST(core, call) {
      const caller = callerOf(core, call)
      if (caller.kind !== 'reseller') {
        throw new SandboxHttpError(403, 'the client token endpoint needs reseller authorization')
      }
      const body = json(call)
      const merchantId = merchantIdField(body.client_id, 'client_id')
      if (typeof body.api_key !== 'string' || body.api_key === '') {
        throw new SandboxHttpError(400, 'api_key must be the reseller key')
      }
      if (body.api_key !== caller.reseller.key) {
        throw new SandboxHttpError(401, 'api_key does not match the reseller key of the Authorization header')
      }
      if (!caller.reseller.merchantIds.includes(merchantId)) {
        throw new SandboxHttpError(403, `merchant ${merchantId} is not a merchant of this reseller`)
      }
      return ok({ data: core.clientToken(caller, merchantId) })
    },
  },
}
