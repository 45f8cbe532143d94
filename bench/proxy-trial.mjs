// The figures of issue 32 through a real nginx; not ratio benchmarks (`pnpm bench` does not run them). After
// `pnpm exec tsc --build`:
// - `node bench/proxy-trial.mjs timings`: when does the sender get its answer, per nginx setup and per kind of
//   upload? (about 70 s: the stalled client under nginx's defaults takes 60 s)
// - `node bench/proxy-trial.mjs restart`: rolling restarts of three receivers under load, per shutdown sequence and
//   nginx retry setting (REDIS_URL, or a throw-away redis-server).
import { sampleEvent, signedDelivery } from '@payhooks/testing'
import { startNginx, webhookLocation } from '../test/fixtures/nginx.mjs'
import { rawPost } from '../test/fixtures/raw-post.mjs'
import { rollingRestart } from '../test/fixtures/rolling-restart.mjs'
import { startTimingReceiver, TIMING_SECRET } from '../test/fixtures/timing-receiver.mjs'
import { startRedis } from './redis-server.mjs'

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

async function timings() {
  const rows = await Promise.all(setups.map(run))
  console.log(`| setup | ${scenarios.map((s) => s.name).join(' | ')} |`)
  console.log(`|---|${scenarios.map(() => '---').join('|')}|`)
  for (const [i, setup] of setups.entries()) console.log(`| ${setup.name} | ${rows[i].join(' | ')} |`)
}

const restarts = [
  { name: "README's old snippet, nginx's default retries", shutdown: 'readme', retry: false },
  { name: "README's old snippet, non_idempotent", shutdown: 'readme', retry: true },
  { name: 'sequence, default retries', shutdown: 'sequence', retry: false },
  { name: 'sequence, non_idempotent, default max_fails', shutdown: 'sequence', retry: true, serverParams: '' },
  { name: 'sequence, documented nginx', shutdown: 'sequence', retry: true },
]

async function restart() {
  const redis = process.env.REDIS_URL ? undefined : await startRedis()
  const redisUrl = process.env.REDIS_URL ?? redis.url
  console.log('| shutdown, nginx | events | 200 | 409 | 502 | 503 | acknowledged-unhandled | double runs |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const { name, shutdown, retry, serverParams } of restarts) {
    const location = webhookLocation({ retry })
    const r = await rollingRestart({ redisUrl, location, shutdown, serverParams })
    const s = (code) => r.statuses[code] ?? 0
    console.log(
      `| ${name} | ${r.events} | ${s(200)} | ${s(409)} | ${s(502)} | ${s(503)} | ${r.acknowledgedUnhandled} | ${r.doubleRuns} |`,
    )
  }
  await redis?.stop()
}

const what = process.argv[2] ?? 'timings'
if (what === 'timings') await timings()
else if (what === 'restart') await restart()
else throw new Error('node bench/proxy-trial.mjs timings|restart')
