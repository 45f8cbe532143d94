// Shared by core's unit tests; not part of the build (tsconfig excludes it).
import type { WebhookError } from '../errors/index.js'
import { createWebhooks } from '../receiver/create.js'
import type { WebhooksOptions } from '../webhooks-options.js'

/** A receiver on `secret` that records what it reports to onError (`errors`) and logs at error and warn (`warnings`). */
export function recordingReceiver<C extends object = {}>(
  secret: string,
  options: Partial<WebhooksOptions<{}, C>> = {},
) {
  const errors: WebhookError[] = []
  const warnings: string[] = []
  const logger = { error: (line: string) => warnings.push(line), warn: (line: string) => warnings.push(line) }
  const webhooks = createWebhooks<{}, C>({ secret, logger, ...options })
  webhooks.onError((error) => errors.push(error))
  return { webhooks, errors, warnings }
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
