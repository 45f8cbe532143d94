import { StoreError } from '../errors/index.js'
import type { WebhookStore } from '../store.js'
import { check, nonNegativeNumber, positiveInteger } from '../validations.js'
import type { HeldKeysOptions, HeldOrderingKey } from './types.js'

/** The most keys one `heldKeys` call lists. */
export const MAX_HELD_KEYS = 1000

/**
 * `webhooks.heldKeys`: the store's list, bounded by `timeoutMs` (a store that has not answered by then is a
 * `StoreError`, so a console never hangs), or undefined when the store cannot list.
 */
export async function listHeldKeys(
  store: WebhookStore<object>,
  options: HeldKeysOptions = {},
): Promise<HeldOrderingKey[] | undefined> {
  const limit = positiveInteger(options.limit ?? 100, 'heldKeys', 'limit')
  check(limit <= MAX_HELD_KEYS, 'heldKeys', 'limit', `be at most ${MAX_HELD_KEYS}`)
  const timeoutMs = nonNegativeNumber(options.timeoutMs ?? 2000, 'heldKeys', 'timeoutMs')
  if (!store.heldKeys) return undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new StoreError('held keys', new Error(`no answer within ${timeoutMs} ms`))),
      timeoutMs,
    )
  })
  try {
    return await Promise.race([
      Promise.resolve()
        .then(() => store.heldKeys?.({ limit }) ?? [])
        .catch((cause: unknown) => {
          throw new StoreError('held keys', cause)
        }),
      timeout,
    ])
  } finally {
    clearTimeout(timer)
  }
}
