import type { Log, LogFields } from '../logging/log.js'
import type { Telemetry } from '../telemetry/telemetry.js'
import type { Alert, AlertListener } from './types.js'
import type { Finding, Watch } from './watch.js'

/** An alert raised and not resolved yet, and the watch's latest finding for it. */
interface Firing {
  alert: Alert
  finding: Finding
}

const keyOf = (name: string, finding: Finding) => `${name}\u0000${finding.eventType ?? ''}`

/**
 * A receiver's alerts: each watch runs on one unref'd timer (at every `checkEveryMs` tick, or at its own `everyMs`),
 * one run of a watch at a time; a condition found is raised once, and resolved once it no longer holds. Raising and
 * resolving go to the listeners, the log and telemetry. Nothing here runs on a delivery's path.
 */
export class Alerts {
  private readonly firing = new Map<string, Firing>()
  private readonly listeners: AlertListener[] = []
  private readonly nextAt = new Map<Watch, number>()
  private readonly running = new Set<Promise<void>>()
  private readonly controller = new AbortController()
  private timer: ReturnType<typeof setInterval> | undefined

  constructor(
    private readonly watches: readonly Watch[],
    private readonly log: Log,
    private readonly telemetry: Telemetry | undefined,
    checkEveryMs: number,
  ) {
    if (watches.length === 0) return
    this.timer = setInterval(() => this.tick(), checkEveryMs)
    this.timer.unref?.()
  }

  /** Adds a listener: it gets every alert raised or resolved from now on. */
  onAlert(listener: AlertListener): void {
    this.listeners.push(listener)
  }

  /** The alerts firing now, oldest first. */
  list(): Alert[] {
    return [...this.firing.values()]
      .map(({ alert, finding }) => ({ ...alert, severity: finding.severity, message: finding.message }))
      .sort((a, b) => a.since.getTime() - b.since.getTime())
  }

  /** Runs every watch that is due now (the timer's tick; tests may call it). */
  tick(): void {
    const now = Date.now()
    for (const watch of this.watches) {
      const due = this.nextAt.get(watch) ?? 0
      if (due > now) continue
      this.nextAt.set(watch, Number.POSITIVE_INFINITY)
      let result: ReturnType<Watch['check']>
      try {
        result = watch.check(now, this.controller.signal)
      } catch {
        result = undefined
      }
      if (!(result instanceof Promise)) {
        this.settle(watch, result, now)
        continue
      }
      const run: Promise<void> = result.then(
        (found) => this.settle(watch, found, now),
        () => this.settle(watch, undefined, now),
      )
      this.running.add(run)
      run.finally(() => this.running.delete(run))
    }
  }

  /** For `close()`: stops the timer, aborts the checks under way and waits for them, at most `timeoutMs`. */
  async stop(timeoutMs: number): Promise<void> {
    clearInterval(this.timer)
    this.timer = undefined
    this.controller.abort()
    if (this.running.size === 0) return
    let wait: ReturnType<typeof setTimeout> | undefined
    await Promise.race([
      Promise.all(this.running),
      new Promise((resolve) => {
        wait = setTimeout(resolve, timeoutMs)
      }),
    ])
    clearTimeout(wait)
  }

  private settle(watch: Watch, found: readonly Finding[] | undefined, startedAt: number): void {
    if (this.controller.signal.aborted) return
    this.nextAt.set(watch, watch.everyMs === undefined ? 0 : startedAt + watch.everyMs)
    if (found === undefined) return
    const now = Date.now()
    const keys = new Set<string>()
    for (const finding of found) {
      const key = keyOf(watch.name, finding)
      keys.add(key)
      const known = this.firing.get(key)
      if (known) {
        known.finding = finding
        continue
      }
      const alert: Alert = {
        name: watch.name,
        severity: finding.severity,
        firing: true,
        since: new Date(finding.since),
        message: finding.message,
        ...(finding.eventType === undefined ? {} : { eventType: finding.eventType }),
        ...(finding.secretLabels === undefined ? {} : { secretLabels: finding.secretLabels }),
      }
      this.firing.set(key, { alert, finding })
      this.emit(alert)
    }
    for (const [key, { alert, finding }] of this.firing) {
      if (alert.name !== watch.name || keys.has(key)) continue
      this.firing.delete(key)
      this.emit({
        ...alert,
        severity: finding.severity,
        firing: false,
        resolvedAt: new Date(now),
        message: `resolved: ${finding.message}`,
      })
    }
  }

  private emit(alert: Alert): void {
    const fields: LogFields = {
      code: `alert_${alert.name}`,
      alert: alert.name,
      severity: alert.severity,
      firing: alert.firing,
      since: alert.since.toISOString(),
    }
    if (alert.eventType !== undefined) fields.event_type = alert.eventType
    if (alert.secretLabels !== undefined) fields.secret_labels = alert.secretLabels.join(',')
    const line = `[payhooks] alert ${alert.name}${alert.firing ? ` (${alert.severity})` : ''}: ${alert.message}`
    if (alert.firing && alert.severity === 'critical') this.log.error(fields, line)
    else this.log.warn(fields, line)
    try {
      this.telemetry?.alert?.(alert)
    } catch {
      // Telemetry must not throw; one that does loses this alert's record, nothing else.
    }
    for (const listener of this.listeners) {
      try {
        const returned: unknown = listener(alert)
        if (returned instanceof Promise) returned.catch(() => this.listenerFailed(alert))
      } catch {
        this.listenerFailed(alert)
      }
    }
  }

  /** A listener threw or rejected (a chat webhook down): one fixed line, never its error's text. */
  private listenerFailed(alert: Alert): void {
    this.log.error(
      { code: 'alert_listener_failed', alert: alert.name },
      `[payhooks] an onAlert listener failed on alert ${alert.name}; the other listeners still got it`,
    )
  }
}
