import type { ResolvedChaos } from './types.js'

/** Small deterministic PRNG (mulberry32): the same seed gives the same chaos. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

export interface ChaosPlan {
  /** Delay of the first send after the emit. */
  delayMs: number
  /** No duplicate, a copy sent together with the first send, or a copy this many ms after it. */
  duplicate: 'none' | 'concurrent' | number
}

/** The chaos plans of the deliveries, one a call, drawn from `chaos.seed`; none without chaos. */
export function chaosPlanner(chaos: ResolvedChaos | undefined): () => ChaosPlan {
  const random = chaos ? seededRandom(chaos.seed) : undefined
  return () => {
    if (!chaos || !random) return { delayMs: 0, duplicate: 'none' }
    // Always draw the same number of values, so one delivery's plan never shifts the next one's.
    const [reorder, delay, duplicate, concurrent, duplicateDelay] = [random(), random(), random(), random(), random()]
    const delayMs = reorder < chaos.reorderRate ? 1 + Math.floor(delay * chaos.maxDelayMs) : 0
    if (duplicate >= chaos.duplicateRate) return { delayMs, duplicate: 'none' }
    return { delayMs, duplicate: concurrent < 0.5 ? 'concurrent' : 1 + Math.floor(duplicateDelay * chaos.maxDelayMs) }
  }
}
