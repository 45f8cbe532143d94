// The timings of issue 32 item 4, through a real nginx: when does the sender get its answer, per nginx setup and
// per kind of upload? Not a ratio benchmark (`pnpm bench` does not run it): `pnpm exec tsc --build` then
// `node bench/proxy-trial.mjs` (about 70 s; the stalled client under nginx's defaults takes 60 s).
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { startNginx, webhookLocation } from '../test/fixtures/nginx.mjs'
import { rawPost } from '../test/fixtures/raw-post.mjs'
import { startTimingReceiver, TIMING_SECRET } from '../test/fixtures/timing-receiver.mjs'

const setups = [
  { name: 'receiver alone', nginx: undefined, arrival: false },
  {
    name: 'nginx defaults (buffering on)',
    nginx: 'proxy_pass http://receivers; proxy_http_version 1.1; proxy_set_header Connection "";',
    arrival: false,
  },
  { name: 'buffering on + X-Request-Start', nginx: webhookLocation({ buffering: true }), arrival: true },
  { name: 'documented (buffering off)', nginx: webhookLocation({ arrival: false }), arrival: false },
  { name: 'documented + X-Request-Start', nginx: webhookLocation(), arrival: true },
]

const scenarios = [
  { name: '9 s upload', uploadMs: 9000, sleep: 0 },
  { name: '6 s upload, 4 s handler', uploadMs: 6000, sleep: 4000 },
  { name: 'stalled after half', uploadMs: 0, sleep: 0, stall: true },
  { name: 'fast, 4 s handler', uploadMs: 0, sleep: 4000 },
]

async function run(setup) {
  const receiver = await startTimingReceiver(setup.arrival ? { proxyArrival: { header: 'x-request-start' } } : {})
  const nginx = setup.nginx ? await startNginx({ upstreams: [receiver.port], location: setup.nginx }) : undefined
  const port = nginx?.port ?? receiver.port
  const results = await Promise.all(
    scenarios.map(async (scenario, i) => {
      const event = sampleEvent('transaction_settled', { data: { transaction_description: `sleep:${scenario.sleep}` } })
      const { body, headers } = await signedDelivery(event, TIMING_SECRET)
      const answer = await rawPost({
        port,
        headers: { ...headers, 'x-test-id': String(i) },
        body,
        uploadMs: scenario.uploadMs,
        stallAfter: scenario.stall ? Math.floor(body.length / 2) : undefined,
      })
      return `${answer.status || 'none'} at ${(answer.ms / 1000).toFixed(2)} s`
    }),
  )
  await nginx?.stop()
  await receiver.close()
  return results
}

const rows = await Promise.all(setups.map(run))
console.log(`| setup | ${scenarios.map((s) => s.name).join(' | ')} |`)
console.log(`|---|${scenarios.map(() => '---').join('|')}|`)
for (const [i, setup] of setups.entries()) console.log(`| ${setup.name} | ${rows[i].join(' | ')} |`)
