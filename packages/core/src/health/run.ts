import { alertChecks } from '../alerts/health.js'
import { bulkheadChecks } from '../bulkheads/health.js'
import { asWarnings, journalCheck } from '../journal/health.js'
import { pauseCheck } from '../pause/control.js'
import type { Engine } from '../receiver/engine.js'
import { nonNegativeNumber } from '../validations.js'
import type { HealthCheck, HealthOptions, HealthReport } from './types.js'

/** What contributes checks: a store, a dead-letter store or a queue, with the name its failure is reported under. */
interface Source {
  readonly name: string
  /** Its failures (a timeout too) are warnings. */
  readonly warning?: boolean
  health?(signal: AbortSignal): PromiseLike<HealthCheck[]> | HealthCheck[]
}

/** A failed source's check: its error's code at most (a driver's message may name a host or a user). */
function failure(name: string, detail: string): HealthCheck {
  return {
    name,
    ok: false,
    detail,
    fix: `see why the ${name.replace('_', ' ')} cannot be reached (is it running, reachable from this host?)`,
  }
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && /^[A-Za-z0-9_]{1,40}$/.test(code) ? ` (${code})` : ''
}

/** The stores' checks under way: `close()` waits for them, so that none touches a store (or its client) after. */
type Running = Set<Promise<unknown>>

async function sourceChecks(
  source: Source,
  signal: AbortSignal,
  timeoutMs: number,
  running: Running,
): Promise<HealthCheck[]> {
  if (!source.health) {
    return [{ name: source.name, ok: true, detail: 'not checked: the store has no health() method' }]
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<HealthCheck[]>((resolve) => {
    timer = setTimeout(() => resolve([failure(source.name, `no answer within ${timeoutMs} ms`)]), timeoutMs)
  })
  const checked = Promise.resolve()
    .then(() => source.health?.(signal) ?? [])
    .then(
      (checks) => (Array.isArray(checks) ? checks : []),
      (error: unknown) => [failure(source.name, `its health check failed${errorCode(error)}`)],
    )
  // Tracked until the store's own check settles, past the timeout too: its commands may still be under way.
  running.add(checked)
  checked.then(() => running.delete(checked))
  try {
    return await Promise.race([checked, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** The receiver's own checks: closing, whether every event slot is taken with deliveries waiting, hung runs. */
function ownChecks(engine: Engine): HealthCheck[] {
  const checks: HealthCheck[] = [
    engine.closing
      ? { name: 'closing', ok: false, detail: 'close() was called: deliveries are answered 503 closing' }
      : { name: 'closing', ok: true },
  ]
  if (engine.draining && !engine.closing) {
    checks.push({ name: 'draining', ok: false, detail: 'drain() was called: this instance is being shut down' })
  }
  const slots = engine.slots
  if (slots) {
    const { max, running } = slots.usage()
    // Those waiting for their type's share of the slots too (bulkheads).
    const waiting = slots.waiting + engine.bulkheads.waiting
    const saturated = running >= max && waiting > 0
    const check: HealthCheck = {
      name: 'event_slots',
      ok: !saturated,
      severity: 'warning',
      detail: `${running} of ${max} event slots in use, ${waiting} waiting`,
    }
    if (saturated) check.fix = 'raise maxConcurrentEvents (and the store pool behind it), or add instances'
    checks.push(check)
  }
  const hung = hungCheck(engine)
  if (hung) checks.push(hung)
  checks.push(...bulkheadChecks(engine.bulkheads))
  const paused = pauseCheck(engine.pauses, engine.deadLetters?.durable === true)
  if (paused) checks.push(paused)
  if (engine.journal) checks.push(journalCheck(engine.journal))
  checks.push(...alertChecks(engine.alerts))
  return checks
}

/**
 * Runs hung past `maxRunMs`, while there are some (as `draining`): a warning, an error once they hold every event
 * slot (the instance can only answer 503 `busy`: the balancer should take it out, a liveness probe restart it).
 */
function hungCheck(engine: Engine): HealthCheck | undefined {
  const { count, oldest } = engine.claims.hung()
  if (oldest === null) return undefined
  const max = engine.slots?.usage().max
  const full = max !== undefined && count >= max
  const slots = max === undefined ? '' : ` of ${max} event slots`
  return {
    name: 'hung_handlers',
    ok: false,
    severity: full ? 'error' : 'warning',
    detail: `${count}${slots} held by handlers hung past maxRunMs; the oldest, ${oldest.eventType} ${oldest.eventId}, since ${oldest.since.toISOString()}`,
    fix: full
      ? 'restart this instance (its hung events run again once their leases end); find the call that ignores context.signal'
      : 'find the call that ignores context.signal (a fetch or query without it) and pass the signal on',
  }
}

/** The stores' checks, each bounded by `timeoutMs`: resolves, never rejects. */
async function backendChecks(
  engine: Engine,
  timeoutMs: number,
  running: Running,
  controller: AbortController,
): Promise<HealthCheck[]> {
  const sources: Source[] = [{ name: 'store', health: engine.store.health?.bind(engine.store) }]
  const deadLetters = engine.deadLetters
  if (deadLetters) sources.push({ name: 'dead_letter_store', health: deadLetters.health?.bind(deadLetters) })
  // A queue without checks of its own (inProcessQueue) adds none.
  const queue = engine.queue
  if (queue?.health) sources.push({ name: 'queue', health: queue.health.bind(queue) })
  // A journal's own checks (reachability, setup) are warnings: it is not on the delivery path.
  // The pause store's checks are warnings: a store unread leaves the pauses last read in force.
  const pauses = engine.pauses.store
  if (pauses.health) sources.push({ name: 'pause_store', health: pauses.health.bind(pauses), warning: true })
  const journal = engine.journal?.journal
  if (journal?.health) sources.push({ name: 'journal', health: journal.health.bind(journal), warning: true })
  try {
    const found = await Promise.all(
      sources.map(async (source) => {
        const checks = await sourceChecks(source, controller.signal, timeoutMs, running)
        return source.warning ? asWarnings(checks) : checks
      }),
    )
    return found.flat()
  } finally {
    controller.abort()
  }
}

/** The last check of the stores: when it started, with which bound, and its (maybe pending) result. */
interface Shared {
  startedAt: number
  timeoutMs: number
  checks: Promise<HealthCheck[]>
}

/** The receiver's `health()`, and how `close()` stops it. */
export interface SharedHealth {
  (options?: HealthOptions): Promise<HealthReport>
  /**
   * For `close()`: aborts the stores' checks under way (their `signal`) and resolves once they settled, at most
   * `timeoutMs`. From the moment the receiver closes, `health()` starts no check of the stores: a start-up check or a
   * probe never sends a store command once `close()` resolved (a Redis client quit by then would fail the write).
   */
  settle(timeoutMs: number): Promise<void>
}

/**
 * The receiver's `health()`: its own checks, read afresh at each call (they cost nothing), and its stores' checks,
 * shared: a call joins a check of the stores started less than `maxAgeMs` ago with the same `timeoutMs`, still
 * running or finished, so a thousand probes a second cost the backend one check a second. Once the receiver is
 * closing, only its own checks (`closing` failed). Resolves, never rejects (but for invalid options).
 */
export function sharedHealth(engine: Engine): SharedHealth {
  let last: Shared | undefined
  const running: Running = new Set()
  const controllers = new Set<AbortController>()
  const health = async (options: HealthOptions = {}) => {
    const timeoutMs = nonNegativeNumber(options.timeoutMs ?? 2000, 'health', 'timeoutMs')
    const maxAgeMs = nonNegativeNumber(options.maxAgeMs ?? 1000, 'health', 'maxAgeMs')
    const now = Date.now()
    let found: HealthCheck[] = []
    if (!engine.closing) {
      if (!last || last.timeoutMs !== timeoutMs || !(now - last.startedAt < maxAgeMs)) {
        const controller = new AbortController()
        controllers.add(controller)
        const checks = backendChecks(engine, timeoutMs, running, controller)
        checks.then(() => controllers.delete(controller))
        last = { startedAt: now, timeoutMs, checks }
      }
      found = await last.checks
    }
    const checks = [...ownChecks(engine), ...found.map((check) => ({ ...check }))]
    return { ready: checks.every((check) => check.ok || check.severity === 'warning'), checks }
  }
  const settle = async (timeoutMs: number) => {
    for (const controller of controllers) controller.abort()
    if (running.size === 0) return
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      Promise.all(running),
      new Promise((resolve) => {
        timer = setTimeout(resolve, timeoutMs)
      }),
    ])
    clearTimeout(timer)
  }
  return Object.assign(health, { settle })
}
