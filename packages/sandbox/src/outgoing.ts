import { RETRY_HOURS, RETRY_INTERVAL_MS } from '@payhooks/core'
import { attemptOf } from './attempt.js'
import type { Clock, ClockTimer } from './clock.js'
import type { PendingSends } from './pending-sends.js'
import { postSigned } from './send.js'
import type { SandboxAttempt, SandboxDelivery, SandboxLogEntry, SandboxSubscription } from './types.js'

/** One subscription's delivery of one logged event. */
export interface OutgoingDelivery {
  view: SandboxDelivery
  entry: SandboxLogEntry
  /** Index of the next scheduled attempt: 0 for the first send, then 1 to 72. */
  nextRetry: number
  timer?: ClockTimer
}

/** What the sends read of the delivery engine's options. */
export interface SenderOptions {
  clock: Clock
  timeoutMs: number
  subscription(id: string): SandboxSubscription | undefined
  logger: ((line: string) => void) | undefined
}

/** What the sends share with the delivery engine. */
export interface SenderEngine {
  readonly pending: PendingSends
  readonly signal: AbortSignal
  closed(): boolean
  changed(eventId: string): void
}

/** The attempts of the deliveries: each scheduled one (the first send, then the hourly retries), copies and resends. */
export class Sender {
  constructor(
    private readonly options: SenderOptions,
    private readonly engine: SenderEngine,
  ) {}

  /** Scheduled attempt `delivery.nextRetry`, then the next retry if it failed. */
  async fire(delivery: OutgoingDelivery, withCopy: boolean): Promise<void> {
    const { view } = delivery
    delivery.timer = undefined
    view.nextAttemptTime = undefined
    if (view.state !== 'pending' || this.engine.closed()) return
    const retry = delivery.nextRetry++
    const sends = [this.send(delivery, 'scheduled', retry)]
    if (withCopy) sends.push(this.send(delivery, 'duplicate'))
    await Promise.all(sends)
    if (view.state !== 'pending' || this.engine.closed()) return
    if (delivery.nextRetry > RETRY_HOURS) {
      view.state = 'failed'
      view.reason = `no 2XX answer within ${RETRY_HOURS} hours`
      this.options.logger?.(`✗ ${view.eventType} ${view.eventId} → ${view.subscriptionId}: failed, retries exhausted`)
      this.engine.changed(view.eventId)
      return
    }
    const due = view.firstAttemptTime + delivery.nextRetry * RETRY_INTERVAL_MS
    view.nextAttemptTime = due
    delivery.timer = this.options.clock.setTimeout(
      () => this.fire(delivery, false),
      Math.max(0, due - this.options.clock.now()),
    )
    this.engine.changed(view.eventId)
  }

  send(delivery: OutgoingDelivery, kind: SandboxAttempt['kind'], retry?: number): Promise<void> {
    const subscription = this.options.subscription(delivery.view.subscriptionId)
    // An inactive subscription gets nothing; its schedule keeps running in case it is reactivated.
    if (!subscription?.is_active || this.engine.closed()) return Promise.resolve()
    return this.engine.pending.track(this.post(delivery, subscription, kind, retry))
  }

  private async post(
    delivery: OutgoingDelivery,
    subscription: SandboxSubscription,
    kind: SandboxAttempt['kind'],
    retry: number | undefined,
  ): Promise<void> {
    const time = this.options.clock.now()
    const result = await postSigned(
      subscription.url,
      subscription.signature_secret,
      delivery.entry.body,
      this.options.timeoutMs,
      this.engine.signal,
    )
    const attempt = attemptOf(kind, retry, time, result)
    const { view } = delivery
    view.attempts.push(attempt)
    if (result.ok && view.state !== 'delivered') {
      view.state = 'delivered'
      view.reason = undefined
      delivery.timer?.cancel()
      delivery.timer = undefined
      view.nextAttemptTime = undefined
    }
    this.engine.changed(view.eventId)
    this.options.logger?.(
      `${result.ok ? '✓' : '·'} ${view.eventType} ${view.eventId} → ${subscription.url} (${kind}${retry ? ` ${retry}` : ''}): ${
        result.status ?? result.error
      } in ${result.latencyMs} ms`,
    )
  }
}
