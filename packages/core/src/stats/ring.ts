// Rings of time buckets: slot `n % size` holds period n. Moving to a later period zeroes the slots skipped, so a
// reading never sees a count older than the ring; a clock that steps back records into the current period.

/** The period `now` falls in, never before `current` (a clock stepped back counts in the current period). */
export function periodOf(now: number, length: number, current: number): number {
  const period = Math.floor(now / length)
  return Math.max(period, current)
}

/** Zeroes the slots of `counts` (`width` numbers per slot, `size` slots) for the periods after `from` up to `to`. */
export function clearSlots(counts: Uint32Array, width: number, size: number, from: number, to: number): void {
  const first = Math.max(from + 1, to - size + 1)
  for (let period = first; period <= to; period++) {
    const start = (period % size) * width
    counts.fill(0, start, start + width)
  }
}

/** The sums of `counts` (`width` numbers per slot) over all slots. */
export function sumSlots(counts: Uint32Array, width: number): Float64Array {
  const sums = new Float64Array(width)
  for (let i = 0; i < counts.length; i++) sums[i % width] = (sums[i % width] as number) + (counts[i] as number)
  return sums
}
