// The sandbox's own routes under `/_sandbox/`, which the service never uses. http.ts checks the
// control token before any of them runs.
import { isManualClock } from './clock.js'
import { SandboxHttpError } from './errors.js'
import { eventIdsField, json, merchantIdField, ok, type RouteTable, type SandboxCore } from './routing.js'

/**
 * The attempts made at clock times in (`from`, `to`], oldest first, with the event and subscription they belong
 * to: what an advance of the clock ran. The signature is left out; `hint` says what a puzzling answer means.
 */
function attemptsBetween(core: SandboxCore, from: number, to: number) {
  const ran = []
  for (const entry of core.engine.log()) {
    for (const delivery of entry.deliveries) {
      for (const { signature: _, ...attempt } of delivery.attempts) {
        if (attempt.time <= from || attempt.time > to) continue
        const url = core.store.get(delivery.subscriptionId)?.url
        ran.push({
          eventId: entry.eventId,
          eventType: entry.eventType,
          subscriptionId: delivery.subscriptionId,
          ...(url ? { url } : {}),
          ...attempt,
        })
      }
    }
  }
  return ran.sort((a, b) => a.time - b.time)
}

export const controlRoutes: RouteTable = {
  '/_sandbox/emit': {
    async POST(core, call) {
      const body = json(call)
      if (
        body.data !== undefined &&
        (typeof body.data !== 'object' || body.data === null || Array.isArray(body.data))
      ) {
        throw new SandboxHttpError(400, 'data must be an object')
      }
      const entry = await core.emit(body.event_type as string, body.data as Record<string, unknown> | undefined, {
        ...(body.merchant_id === undefined ? {} : { merchantId: merchantIdField(body.merchant_id, 'merchant_id') }),
        ...(body.event_id === undefined ? {} : { eventId: body.event_id as string }),
        ...(body.created_at === undefined ? {} : { createdAt: body.created_at as string }),
      })
      const deliveries = entry.deliveries.length
      const warning = deliveries === 0 ? core.noDeliveryReason(entry.eventType, entry.merchantId) : undefined
      return ok({ data: entry, deliveries, ...(warning ? { warning } : {}) })
    },
  },
  '/_sandbox/resend': {
    async POST(core, call) {
      const ids = eventIdsField(json(call).ids)
      const unknown = ids.filter((id) => !core.engine.hasDeliveries(id, () => true))
      if (unknown.length > 0) throw new SandboxHttpError(404, `no delivered event with id ${unknown.join(', ')}`)
      const sends = await Promise.all(ids.map((id) => core.engine.resend(id, () => true)))
      return ok({ data: { sends: sends.reduce((sum, n) => sum + n, 0) } })
    },
  },
  '/_sandbox/log': {
    GET(core) {
      const data = core.engine.log()
      return ok({ total_item_count: data.length, data })
    },
  },
  '/_sandbox/log/': {
    GET(core, call) {
      const entry = core.engine.entry(call.param)
      if (!entry) throw new SandboxHttpError(404, `no event ${call.param} in the log`)
      return ok({ data: entry })
    },
  },
  '/_sandbox/clock': {
    GET(core) {
      const now = core.clock.now()
      return ok({ data: { now: new Date(now).toISOString(), time: now, manual: isManualClock(core.clock) } })
    },
  },
  '/_sandbox/clock/advance': {
    async POST(core, call) {
      const { ms } = json(call)
      if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
        throw new SandboxHttpError(400, 'ms must be a number of milliseconds >= 0')
      }
      if (!isManualClock(core.clock)) {
        throw new SandboxHttpError(
          409,
          'the sandbox runs on a real clock: start it with --manual-clock (or clock: "manual") to move time by hand',
        )
      }
      const before = core.clock.now()
      await core.advance(ms)
      const now = core.clock.now()
      return ok({ data: { now: new Date(now).toISOString(), attempts: attemptsBetween(core, before, now) } })
    },
  },
  '/_sandbox/credentials': {
    GET(core) {
      return ok({ data: core.credentials })
    },
  },
  '/_sandbox/events': {
    GET(core, call) {
      core.hub.open(call.response, core.hello())
      return { handled: true }
    },
  },
}
