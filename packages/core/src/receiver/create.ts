import { Alerts, alertWatches } from '../alerts/index.js'
import { Bulkheads } from '../bulkheads/bulkheads.js'
import { checkBulkheads } from '../bulkheads/options.js'
import { checkDeadLetterStore, type DeadLetters, deadLetterView } from '../dead-letters/index.js'
import { Claims, dispatchInSlotPromise, observeDispatch, Slots } from '../dispatch/index.js'
import { ClosingError } from '../errors/index.js'
import { createEventHandler, on, onAny, onError, report } from '../event-handler/index.js'
import { checkAtStart, sharedHealth } from '../health/index.js'
import { Deadlines } from '../http/deadline.js'
import { checkProxyArrival } from '../http/proxy-arrival.js'
import { defaultInstance, eventsView, JournalRecorder } from '../journal/index.js'
import { createLog } from '../logging/log.js'
import { warnAtStart, warnUnknownType, watchSecrets } from '../logging/warnings.js'
import { listHeldKeys, orderingTable, withOnOptions } from '../ordering/index.js'
import { memoryPauseStore, type PauseStore, PauseWatch, pauseControl } from '../pause/index.js'
import { eventSchemas, type SchemaMap, type SchemaMapOption } from '../schemas/events.js'
import { DoctorBudgets } from '../signature-doctor/index.js'
import type { CloseOptions, EventMap, Handler, Webhooks } from '../types.js'
import { check, nonNegativeNumber } from '../validations.js'
import { checkSecrets } from '../verify/secrets.js'
import { receiveWebRequest } from '../web.js'
import type { WebhooksOptions } from '../webhooks-options.js'
import { refusedAnswer } from './answer.js'
import type { Engine } from './engine.js'
import { gaugesOf, waitingOf } from './gauges.js'
import { checkOptions } from './options.js'
import { expire, receive, respond } from './receive.js'
import { shutDown } from './shutdown.js'

/**
 * Creates a webhook receiver for the payment service. Handlers get the event and a context: `signal`, plus
 * what the store adds (`db` with `@payhooks/postgres`), typed from the `store` option.
 *
 * @example
 * const webhooks = createWebhooks({ secret: process.env.WEBHOOK_SECRET!, store: memoryStore() })
 * webhooks.on('transaction_settled', async (event) => {
 *   console.log(event.event_id, event.data.settlement_amount)
 * })
 * // Any fetch-style runtime:
 * export default { fetch: (req: Request) => webhooks.handle(req) }
 */
export function createWebhooks<S extends SchemaMapOption = {}, C extends object = {}>(
  options: WebhooksOptions<S, C>,
): Webhooks<EventMap<S>, C> {
  const checked = checkOptions(options as WebhooksOptions<SchemaMapOption, object>)
  const { deadlineMs, maxBodyBytes, leaseMs, maxRunMs, store, maxEventAgeMs, maxClockSkewMs, maxConcurrentEvents } =
    checked
  const secretOption = options.secret
  const eventHandler = createEventHandler(createLog(options.logger), options.telemetry)
  // Ordering rules need a store that keeps ordering fences.
  const ordering = orderingTable(options.ordering)
  check(
    !ordering || store.ordering === true,
    'createWebhooks',
    'store',
    'keep ordering fences (store.ordering) for the ordering rules',
    TypeError,
  )
  const proxyArrival = checkProxyArrival(options.proxyArrival)
  const secrets = typeof secretOption === 'function' ? undefined : checkSecrets(secretOption)
  const { journal } = options
  const instance = instanceOf(options.instance)
  const bulkheads = new Bulkheads(
    checkBulkheads(options.bulkheads, maxConcurrentEvents),
    maxConcurrentEvents,
    deadlineMs,
    eventHandler,
  )
  const deadLetterStore = options.deadLetters && checkDeadLetterStore(options.deadLetters)
  const pauses = new PauseWatch(
    checkPauseStore(options.pauses ?? memoryPauseStore()),
    eventHandler,
    deadLetterStore?.durable === true,
  )
  const engine: Engine = {
    maxBodyBytes,
    secrets,
    secretOption,
    schemas: withSchemas(options.schemas),
    maxEventAgeMs,
    maxClockSkewMs,
    onResolvedSecrets: secrets ? undefined : watchSecrets(eventHandler),
    doctor: new DoctorBudgets(),
    store,
    leaseMs,
    maxRunMs,
    eventHandler,
    slots: maxConcurrentEvents === Number.POSITIVE_INFINITY ? undefined : new Slots(maxConcurrentEvents),
    bulkheads,
    storeReady: undefined,
    initialized: !store.init,
    queue: options.queue,
    deadLetters: deadLetterStore,
    deadLettersReady: undefined,
    deadlineMs,
    proxyArrival,
    closing: undefined,
    draining: false,
    claims: new Claims(bulkheads),
    deadlines: new Deadlines((delivery) => expire(engine, delivery)),
    ordering,
    journal: journal && new JournalRecorder(journal, instance, eventHandler.log),
    pauses,
    alerts: undefined,
  }
  warnAtStart(eventHandler, {
    store,
    queue: options.queue,
    secrets: secrets?.secrets,
    leaseMs,
    maxEventAgeMs,
    defaultStore: options.store === undefined,
  })
  const warnedTypes = new Set<string>()
  const deadLetters = deadLetterView(engine, (work) =>
    engine.closing ? Promise.reject(new ClosingError()) : engine.claims.track(work),
  )

  const gauges = {
    inFlight: () => engine.claims.running - waitingOf(engine),
    waiting: () => waitingOf(engine),
    hung: () => engine.claims.hung(),
    overrunning: () => bulkheads.overrunning(),
    quarantined: () => bulkheads.quarantined(),
    paused: () => pauses.list(),
  }
  const control = pauseControl(pauses, instance, engine.deadLetters && deadLetters, () => engine.closing !== undefined)

  const health = sharedHealth(engine)
  const { watches, checkEveryMs } = alertWatches(options.alerts, {
    stats: eventHandler.stats,
    secrets,
    hung: () => engine.claims.hung(),
    maxSlots: engine.slots?.usage().max,
    journal: engine.journal,
    countParked: deadLetters.count && (() => (deadLetters.count as DeadLetters['count'] & {})({ status: 'parked' })),
    storeChecks: async () => (await health()).checks,
    handledTypes: () => [...eventHandler.handlers.keys()],
  })
  engine.alerts =
    watches.length > 0 ? new Alerts(watches, eventHandler.log, options.telemetry, checkEveryMs) : undefined
  const webhooks: Webhooks<EventMap<S>, C> = {
    on(type, handler, onOptions) {
      warnUnknownType(eventHandler, engine.schemas, type, warnedTypes)
      on(eventHandler, type, withOnOptions(handler as Handler<never, never>, onOptions))
      return this
    },
    onAny(handler) {
      onAny(eventHandler, handler as Handler<never, never>)
      return this
    },
    onError(listener) {
      onError(eventHandler, listener)
      return this
    },
    receive: (raw) => receive(engine, raw),
    respond: (raw, send) => respond(engine, raw, send),
    handle: (request) => receiveWebRequest(webhooks, request),
    dispatch(event, dispatchOptions) {
      if (engine.closing) return Promise.reject(new ClosingError())
      const scope = eventHandler.telemetry?.dispatch(event, { source: 'queue', trace: dispatchOptions?.trace })
      const onOrderingKey = dispatchOptions?.onOrderingKey
      const outcome = engine.claims.track(() =>
        dispatchInSlotPromise(engine, event, { answered: true, scope, onOrderingKey }),
      )
      if (scope) observeDispatch(scope, outcome, event)
      return outcome
    },
    deadLetters,
    replay: deadLetters.replay,
    replayAll: deadLetters.replayAll,
    report: (error) => report(eventHandler, error),
    reject: (error, remoteAddress) => refusedAnswer(engine, error, remoteAddress),
    close(closeOptions: CloseOptions = {}) {
      if (engine.closing) return engine.closing
      try {
        const timeoutMs = nonNegativeNumber(closeOptions.timeoutMs ?? 10_000, 'close', 'timeoutMs')
        engine.closing = shutDown(engine, timeoutMs, health.settle)
      } catch (error) {
        return Promise.reject(error)
      }
      return engine.closing
    },
    health: (options) => health(options),
    heldKeys: (heldOptions) => listHeldKeys(store, heldOptions),
    drain() {
      engine.draining = true
    },
    stats: () => eventHandler.stats.read(gauges),
    onAlert(listener) {
      check(typeof listener === 'function', 'onAlert', 'listener', 'be a function', TypeError)
      engine.alerts?.onAlert(listener)
      return this
    },
    alerts: () => engine.alerts?.list() ?? [],
    events: eventsView(engine.journal),
    pause: control.pause,
    resume: control.resume,
    paused: control.paused,
    maxBodyBytes,
    deadlineMs,
  }
  options.telemetry?.watch?.(gaugesOf(engine, store, deadLetters, health))
  if (options.checkAtStart !== false) {
    checkAtStart(
      eventHandler,
      () => health(),
      () => engine.closing !== undefined,
    )
  }
  options.queue?.attach?.(webhooks as Webhooks<unknown>)
  return webhooks
}

/** `store` when it looks like a {@link PauseStore}, or a `TypeError` naming `createWebhooks`' option. */
function checkPauseStore(store: PauseStore): PauseStore {
  check(
    typeof store === 'object' &&
      store !== null &&
      (['pause', 'resume', 'list'] as const).every((name) => typeof store[name] === 'function'),
    'createWebhooks',
    'pauses',
    'be a pause store (pause, resume, list)',
    TypeError,
  )
  return store
}

/** The `instance` option checked, or the host name and process id. */
function instanceOf(instance: string | undefined): string {
  if (instance === undefined) return defaultInstance()
  check(
    typeof instance === 'string' && instance !== '',
    'createWebhooks',
    'instance',
    'be a non-empty string',
    TypeError,
  )
  return instance
}

/** The built-in schemas with the option's over them; a key set to `undefined` (a conditional's) keeps the built-in. */
function withSchemas(given: SchemaMapOption | undefined): SchemaMap {
  const schemas: SchemaMap = { ...eventSchemas }
  for (const type in given) {
    const schema = given[type]
    if (schema !== undefined) schemas[type] = schema
  }
  return schemas
}
