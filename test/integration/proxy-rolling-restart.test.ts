import { expect, it } from 'vitest'
import { readmeConfig } from '../fixtures/nginx.mjs'
import { rollingRestart } from '../fixtures/rolling-restart.mjs'

// Three receivers on one Redis behind a real nginx with the configuration of docs/guide/production.md, each in turn
// sent SIGTERM under load and started again, shutting down by that page's sequence (not ready, grace, stop accepting, drain,
// exit): no event acknowledged without a run, none run twice, no 502 from nginx and no 503 from a closing receiver.
// With the README's snippet before issue 32 (close the receiver, never the server) the same run gave 503s, and 502s
// without proxy_next_upstream's non_idempotent.
it('a rolling restart behind nginx drops nothing: 0 acknowledged-unhandled, 0 double runs, no 502 or 503', async () => {
  const redisUrl = process.env.REDIS_URL
  if (!redisUrl) throw new Error('REDIS_URL is not set: run through `pnpm test` (node scripts/test.mjs)')
  const result = await rollingRestart({ redisUrl, ...readmeConfig() })
  expect(result.acknowledged).toBeGreaterThan(100)
  expect(result.acknowledged).toBe(result.events)
  expect(result.unanswered).toBe(0)
  expect(result.acknowledgedUnhandled).toBe(0)
  expect(result.doubleRuns).toBe(0)
  expect(result.statuses[502] ?? 0).toBe(0)
  expect(result.statuses[503] ?? 0).toBe(0)
  // 200 for each event, 409 (in progress) or 200 (duplicate) for its copy: nothing else.
  expect(Object.keys(result.statuses).sort()).toEqual(expect.arrayContaining(['200']))
  for (const status of Object.keys(result.statuses)) expect(['200', '409']).toContain(status)
}, 120_000)
