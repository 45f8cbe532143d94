import { type EventHandler, warn } from '../event-handler/index.js'
import { isMemoryStore, MEMORY_MAX_ENTRIES } from '../memory/store.js'
import { isInProcessQueue } from '../queue/queue.js'
import { closestEventType, knownEventTypes, type SchemaMap } from '../schemas/events.js'
import type { WebhookStore } from '../store.js'
import type { WebhookQueue } from '../types.js'

/**
 * Environment variables that say this process is one of several running the same code: a Node cluster worker,
 * a PM2 instance, a Kubernetes pod (a Deployment's replicas, and old and new pods side by side during a rolling
 * update), an AWS Lambda function or a Cloud Run / Knative service (both run as many instances as the traffic
 * needs).
 */
const SEVERAL_INSTANCES: readonly (readonly [variable: string, what: string])[] = [
  ['NODE_UNIQUE_ID', 'a Node cluster worker'],
  ['NODE_APP_INSTANCE', 'a PM2 instance'],
  ['KUBERNETES_SERVICE_HOST', 'a Kubernetes pod'],
  ['AWS_LAMBDA_FUNCTION_NAME', 'an AWS Lambda function'],
  ['K_SERVICE', 'a Cloud Run or Knative service'],
]

interface DenoEnv {
  permissions: { querySync?(descriptor: { name: 'env'; variable: string }): { state: string } }
  env: { get(name: string): string | undefined }
}

/**
 * An environment variable, where the runtime has them: Node, Bun, and Deno only when it may read it already (so
 * no permission prompt); undefined on Workers.
 */
function envVar(name: string): string | undefined {
  try {
    const deno = (globalThis as { Deno?: DenoEnv }).Deno
    if (deno) {
      const granted = deno.permissions.querySync?.({ name: 'env', variable: name }).state === 'granted'
      return granted ? deno.env.get(name) : undefined
    }
    return (globalThis as { process?: { env?: Record<string, string | undefined> } }).process?.env?.[name]
  } catch {
    return undefined
  }
}

/** What {@link warnAtStart} looks at. */
interface StartOptions {
  store: WebhookStore<object>
  queue: WebhookQueue | undefined
  /** The static secrets; undefined with a resolver (see {@link watchSecrets}). */
  secrets: readonly string[] | undefined
  leaseMs: number
  maxEventAgeMs: number
  /** True when the store is the `memoryStore` made because no `store` option was given. */
  defaultStore: boolean
}

/** Warning codes already given for a store shared by several receivers. */
const warnedStores = new WeakMap<object, Set<string>>()

/** Logs the warning `code` about `store` unless it was logged for that store before. */
function warnOncePerStore(state: EventHandler, store: object, code: string, message: string): void {
  let codes = warnedStores.get(store)
  if (!codes) {
    codes = new Set()
    warnedStores.set(store, codes)
  }
  if (codes.has(code)) return
  codes.add(code)
  warn(state, { code }, message)
}

/**
 * Likely mistakes visible when the receiver is created: a `maxEventAgeMs` beyond the store's retention; a store
 * without `extend`; a secret with whitespace around
 * it; a `memoryStore` behind a queue other than the in-process one (workers elsewhere do not share it, a restart
 * forgets it while the queue keeps its jobs), or in production where several instances are detectable from the
 * environment (each would dedupe on its own).
 */
export function warnAtStart(
  state: EventHandler,
  { store, queue, secrets, leaseMs, maxEventAgeMs, defaultStore }: StartOptions,
): void {
  const retentionMs = store.retentionMs
  if (typeof retentionMs === 'number' && maxEventAgeMs > retentionMs) {
    warn(
      state,
      { code: 'max_event_age_over_retention' },
      `maxEventAgeMs (${maxEventAgeMs} ms) is longer than the store's retentionMs (${retentionMs} ms): an event handled more than retentionMs ago and delivered again (a manual resend) would run its handlers twice. Raise the store's retentionMs to it, or leave maxEventAgeMs unset (it then follows the store).`,
    )
  }
  if (!store.extend) {
    warnOncePerStore(
      state,
      store,
      'store_without_extend',
      `the store has no extend(): claims cannot be renewed, so handlers running longer than leaseMs (${leaseMs} ms) may run twice. Add extend() to the store (see "Writing a store").`,
    )
  }
  const padded = secrets ? paddedSecret(secrets) : -1
  if (secrets && padded >= 0) warnPaddedSecret(state, secrets, padded)
  if (!isMemoryStore(store)) return
  if (queue && !isInProcessQueue(queue)) {
    warnOncePerStore(
      state,
      store,
      'memory_store_with_queue',
      'memoryStore with a queue: its claims and done markers live in this process only, so workers in other processes do not see them and a restart forgets them while the queue keeps its jobs; an event may then run twice. Use a shared store (redisStore from @payhooks/redis, postgresStore from @payhooks/postgres).',
    )
  }
  if (envVar('NODE_ENV') !== 'production') return
  if (defaultStore) {
    warnOncePerStore(
      state,
      store,
      'memory_store_default_in_production',
      `no store option, so NODE_ENV=production runs on the default memoryStore: it remembers handled events in this process only. With several instances (replicas, a rolling restart, a cluster) a retry reaching another one runs the handlers again, and a restart forgets every event: payment events then run twice. Its ${MEMORY_MAX_ENTRIES} markers also last only as long as that many events take to arrive (at 500 events/s ~3 min, not 72 h). Fix: pass a shared store (store: redisStore(redis) from @payhooks/redis, or postgresStore(pool) from @payhooks/postgres); for one process on purpose, pass store: memoryStore({ maxEntries }) explicitly.`,
    )
    return
  }
  const found = SEVERAL_INSTANCES.find(([variable]) => envVar(variable) !== undefined)
  if (!found) return
  const [variable, what] = found
  warnOncePerStore(
    state,
    store,
    'memory_store_several_instances',
    `memoryStore in production, and this process looks like one of several (${what}: ${variable} is set): each instance remembers only the events it handled itself, so a retry reaching another one runs the handlers again. Use a shared store (redisStore from @payhooks/redis, postgresStore from @payhooks/postgres).`,
  )
}

/**
 * Index of the first secret with whitespace around it (a newline from a `.env` file or `echo`, a pasted space),
 * or -1. Such a secret only matches if the service's has the same whitespace, which it never does.
 */
function paddedSecret(secrets: readonly string[]): number {
  return secrets.findIndex((secret) => secret.trim() !== secret)
}

/** Looks at a secret resolver's answers until one has a padded secret, and warns about it once. */
export function watchSecrets(state: EventHandler): (secrets: readonly string[]) => void {
  let warned = false
  return (secrets) => {
    if (warned) return
    const padded = paddedSecret(secrets)
    if (padded < 0) return
    warned = true
    warnPaddedSecret(state, secrets, padded)
  }
}

/** The warning for a padded secret, naming its position, never the secret. */
function warnPaddedSecret(state: EventHandler, secrets: readonly string[], index: number): void {
  const which = secrets.length > 1 ? `secret #${index + 1} of ${secrets.length}` : 'the secret'
  warn(
    state,
    { code: 'secret_whitespace' },
    `${which} has whitespace around it (a newline from a .env file or echo?): signatures made with the service's secret will not match it. Trim it.`,
  )
}

const known = new Set<string>(knownEventTypes)

/**
 * Warns once per type when a handler is registered for an event type that has no schema and is not one of the
 * spec's event types (section 6.3): most likely a typo (`transaction_setled`), whose handlers would never run.
 */
export function warnUnknownType(state: EventHandler, schemas: SchemaMap, type: string, warned: Set<string>): void {
  if (known.has(type) || Object.hasOwn(schemas, type) || warned.has(type)) return
  warned.add(type)
  const closest = closestEventType(type, [...new Set([...known, ...Object.keys(schemas)])], 3)
  const hint = closest ? ` Did you mean '${closest}'?` : ''
  warn(
    state,
    { code: 'unknown_event_type', event_type: type },
    `on('${type}'): no schema for that event type and the spec names no such type, so its handlers may never run.${hint} If the service does send it, pass a schema for it (createWebhooks({ schemas })) to type it and silence this.`,
  )
}
