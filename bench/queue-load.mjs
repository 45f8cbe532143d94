// Paced load for the queue benchmarks: autocannon's overallRate, either all at once each second or spread out.
import autocannon from 'autocannon'

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Offers `rate` requests/s for `durationS` to `port`/webhooks with autocannon's `overallRate`, each request the
 * body `nextBody()` returns ({ body, signature }). 'burst': one instance, whose `rate` connections each fire at
 * the top of every second, so `rate` requests arrive at once. 'spread': `spread` instances of `rate / spread`
 * connections started 1000/`spread` ms apart, so the same rate arrives in small groups through the second,
 * closer to a steady stream. Latencies are the measured ones (not autocannon's coordinated-omission correction,
 * which adds synthetic values below the real ones when responses are slower than the pacing interval).
 */
export async function pacedLoad(port, { arrival, rate, spread, durationS, nextBody, signatureHeader }) {
  const instances = arrival === 'spread' ? spread : 1
  const latencies = []
  let ok = 0
  let failed = 0
  const runs = []
  for (let i = 0; i < instances; i++) {
    if (i > 0) await sleep(1000 / instances)
    const instance = autocannon({
      url: `http://127.0.0.1:${port}/webhooks`,
      method: 'POST',
      connections: rate / instances,
      overallRate: rate / instances,
      duration: durationS,
      requests: [
        {
          setupRequest(request) {
            const { body, signature } = nextBody()
            return { ...request, body, headers: { 'content-type': 'application/json', [signatureHeader]: signature } }
          },
        },
      ],
    })
    instance.on('response', (_client, status, _bytes, ms) => {
      latencies.push(ms)
      if (status >= 200 && status < 300) ok++
      else failed++
    })
    instance.on('reqError', () => failed++)
    runs.push(instance)
  }
  await Promise.all(runs)
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN
  return { ok, failed, p50: at(0.5), p99: at(0.99) }
}
