import { bounded } from './bounded.js'
import type { SubscriptionAlertOptions } from './types.js'
import type { Finding, Watch } from './watch.js'

/** The HTTP status of a client's `ApiError`, if it is one. */
const statusOf = (error: unknown): number | undefined => {
  const status = (error as { status?: unknown } | null)?.status
  return typeof status === 'number' ? status : undefined
}

/** A url without a trailing slash, so that `https://a/hooks/` and `https://a/hooks` are the same. */
const normalized = (url: string) => url.replace(/\/+$/, '')

/**
 * `subscription`: one GET of the subscription every `everyMs`: critical when it is inactive, gone (404) or points at
 * another url; a warning per event type handled here (`on(type)`) that it does not list, and when the API refuses
 * the credentials. A network failure or a timeout tells nothing: the alert stays as it was.
 */
export function subscriptionWatch(
  options: Required<Pick<SubscriptionAlertOptions, 'everyMs'>> & SubscriptionAlertOptions,
  handledTypes: () => readonly string[],
): Watch {
  const { client, id, url, everyMs } = options
  return {
    name: 'subscription',
    everyMs,
    async check(now, signal) {
      let failure: number | undefined
      const read = await bounded(
        () =>
          client.subscriptions.get(id, { signal }).catch((error: unknown) => {
            failure = statusOf(error)
            throw error
          }),
        signal,
      )
      if (read === undefined) {
        if (failure === 404) {
          return [
            {
              severity: 'critical',
              since: now,
              message: `subscription ${id} was not found: the service sends this receiver nothing; create it again`,
            },
          ]
        }
        if (failure === 401 || failure === 403) {
          return [
            {
              severity: 'warning',
              since: now,
              message: `the subscription API refused the credentials (${failure}): subscription ${id} cannot be checked`,
            },
          ]
        }
        return undefined
      }
      const found: Finding[] = []
      const wrong: string[] = []
      if (!read.is_active) wrong.push('is inactive')
      if (url !== undefined && normalized(read.url) !== normalized(url))
        wrong.push("points at a url other than this receiver's")
      if (wrong.length > 0) {
        found.push({
          severity: 'critical',
          since: now,
          message: `subscription ${id} ${wrong.join(' and ')}: the service sends this receiver nothing; update it (is_active, url)`,
        })
      }
      const listed = new Set(read.event_types)
      for (const eventType of handledTypes()) {
        if (listed.has(eventType)) continue
        found.push({
          severity: 'warning',
          since: now,
          eventType,
          message: `subscription ${id} does not list ${eventType}, which this receiver handles: add it to the subscription's event_types`,
        })
      }
      return found
    },
  }
}
