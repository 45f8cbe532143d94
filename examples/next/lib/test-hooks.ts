// Used by the repository's tests only (test/fixtures/url-scenarios.ts), switched on by PAYHOOKS_TEST_HOOKS=1.
import type { EventMap, Webhooks } from '@payhooks/core'

/**
 * `evt_fail_once_*`: a handler throws the first time it runs. `evt_slow_*`: a handler runs past the
 * deadline, then prints `released <event_id>`.
 */
export function addTestHooks(webhooks: Webhooks<EventMap>): void {
  const failed = new Set<string>()
  webhooks.onAny(async ({ event_id }) => {
    if (event_id.startsWith('evt_fail_once_') && !failed.has(event_id)) {
      failed.add(event_id)
      throw new Error(`test hook: ${event_id} fails once`)
    }
    if (event_id.startsWith('evt_slow_')) {
      await new Promise((resolve) => setTimeout(resolve, webhooks.deadlineMs + 2500))
      console.log(`released ${event_id}`)
    }
  })
}
