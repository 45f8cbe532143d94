/** Longest a check waits on a store or the subscription API; past it, the check could not tell. */
export const CHECK_TIMEOUT_MS = 5000

/**
 * `read()`, or undefined when it fails, has not answered within {@link CHECK_TIMEOUT_MS}, or `signal` aborts (the
 * receiver closing). Never rejects.
 */
export function bounded<T>(read: () => Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  let onAbort: (() => void) | undefined
  const stop = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, CHECK_TIMEOUT_MS, undefined)
    timer.unref?.()
    onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
  })
  return Promise.race([
    Promise.resolve()
      .then(read)
      .catch(() => undefined),
    stop,
  ]).finally(() => {
    clearTimeout(timer)
    signal.removeEventListener('abort', onAbort as () => void)
  })
}
