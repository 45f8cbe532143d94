import type { VerifiedSecret } from '../verify/secrets.js'
import { clearSlots, periodOf } from './ring.js'
import type { SecretStats, SecretUsage } from './types.js'

export const HOUR = 3_600_000
export const HOURS = 72
/** The most secrets (index and label) counted. */
const MAX_SECRETS = 64

interface Counter {
  readonly index: number
  readonly label: string | undefined
  readonly hours: Uint32Array
  lastUsed: number
}

/** Verifications per secret (index and label), per hour over the last 72 hours. */
export class SecretCounts {
  private hour = 0
  private hourStart = 0
  private last: VerifiedSecret | undefined = undefined
  private lastCounter: Counter | undefined = undefined
  private readonly counters: Counter[] = []

  verified(secret: VerifiedSecret, now: number): void {
    if (now < this.hourStart || now >= this.hourStart + HOUR) {
      const hour = periodOf(now, HOUR, this.hour)
      if (hour !== this.hour) this.advance(hour)
    }
    // Each secret is the same object for every delivery it verifies: the last one's counter is reused.
    let counter = this.last === secret ? this.lastCounter : undefined
    if (!counter) {
      counter = this.counter(secret)
      if (!counter) return
      this.last = secret
      this.lastCounter = counter
    }
    ;(counter.hours[this.hour % HOURS] as number)++
    counter.lastUsed = now
  }

  read(now: number): SecretStats {
    const hour = periodOf(now, HOUR, this.hour)
    if (hour !== this.hour) this.advance(hour)
    const usage = this.counters
      .map((counter): SecretUsage => {
        const perHour = Array.from({ length: HOURS }, (_, i) => counter.hours[(hour - HOURS + 1 + i) % HOURS] as number)
        const entry = {
          index: counter.index,
          perHour,
          total: perHour.reduce((sum, count) => sum + count, 0),
          lastUsedAt: new Date(counter.lastUsed),
        }
        return counter.label === undefined ? entry : { ...entry, label: counter.label }
      })
      .sort((a, b) => a.index - b.index)
    return { from: new Date((hour - HOURS + 1) * HOUR), usage }
  }

  private counter(secret: VerifiedSecret): Counter | undefined {
    for (const counter of this.counters) {
      if (counter.index === secret.index && counter.label === secret.label) return counter
    }
    // A resolver may label a secret per subscription: a bound, so its labels cannot grow this without end.
    if (this.counters.length >= MAX_SECRETS) return undefined
    const counter = { index: secret.index, label: secret.label, hours: new Uint32Array(HOURS), lastUsed: 0 }
    this.counters.push(counter)
    return counter
  }

  private advance(hour: number): void {
    for (const counter of this.counters) clearSlots(counter.hours, 1, HOURS, this.hour, hour)
    this.hour = hour
    this.hourStart = hour * HOUR
  }
}
