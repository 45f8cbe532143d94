/**
 * An `AbortController` made only when a handler reads `context.signal`: most handlers never do, and making one
 * costs a few microseconds per delivery. Aborted before that, the signal is born aborted with the same reason.
 */
export class LazyAbortController {
  #controller: AbortController | undefined
  #aborted = false
  #reason: unknown

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      if (this.#aborted) this.#controller.abort(this.#reason)
    }
    return this.#controller.signal
  }

  abort(reason?: unknown): void {
    if (this.#aborted) return
    this.#aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
  }
}
