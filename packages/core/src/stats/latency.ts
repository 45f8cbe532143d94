// A log histogram of answer latency: bucket 0 holds under 1 ms, bucket b >= 1 holds [2^((b-1)/4), 2^(b/4)) ms,
// four buckets per doubling (each about 19% wide); the last holds everything from about 17 minutes up.

export const BUCKETS = 80

/** The bucket of a latency of `ms` milliseconds. */
export function bucketOf(ms: number): number {
  if (!(ms >= 1)) return 0
  const bucket = 1 + Math.floor(Math.log2(ms) * 4)
  return bucket < BUCKETS ? bucket : BUCKETS - 1
}

/** The upper edge of `bucket`, in milliseconds, to 2 significant digits at most. */
export function upperEdge(bucket: number): number {
  return Number((2 ** (bucket / 4)).toPrecision(2))
}

/** The upper edge of the bucket holding quantile `q` of `sums` (counts per bucket), or null when empty. */
export function quantile(sums: Float64Array, total: number, q: number): number | null {
  if (total === 0) return null
  const rank = Math.ceil(q * total)
  let seen = 0
  for (let bucket = 0; bucket < sums.length; bucket++) {
    seen += sums[bucket] as number
    if (seen >= rank) return upperEdge(bucket)
  }
  return upperEdge(sums.length - 1)
}
