import type { Ordering } from '../ordering/index.js'
import type { VerifiedSecret } from '../verify/secrets.js'
import type { LazyAbortController } from './lazy-abort.js'

/** Where a store's context object keeps its controller, for the shared `signal` getter. */
const CONTROLLER = Symbol('payhooks.controller')

/**
 * The handlers' context when the store adds none: `{ signal, verifiedWith }`. `signal` is a getter on the
 * prototype (one function for every context, so one hidden class), made when first read; being on the prototype,
 * it is not copied by `{ ...context }`. `verifiedWith` and `ordering` are always assigned (`undefined` for a
 * queue worker's dispatch, and for a type without an ordering rule), so every context has one shape.
 */
export class SignalContext {
  readonly #controller: LazyAbortController
  readonly verifiedWith: VerifiedSecret | undefined
  /** The event's place in its ordering key's sequence (ordering fences), when its type has a rule. */
  readonly ordering: Ordering | undefined
  constructor(controller: LazyAbortController, verifiedWith: VerifiedSecret | undefined, ordering?: Ordering) {
    this.#controller = controller
    this.verifiedWith = verifiedWith
    this.ordering = ordering
  }

  /** Aborted when the claim is lost or `close` gives up waiting for the handlers. */
  get signal(): AbortSignal {
    return this.#controller.signal
  }
}

/**
 * `signal` as an own, enumerable accessor whose getter is one shared function, for a store's context object (not
 * ours to give a prototype). An object literal with its own `get signal()` made a new closure, hence a new hidden
 * class, per delivery: V8 keeps those maps in old space, so every delivery's context and what it reached survived
 * young-generation GC (profiling under HTTP load put the scavenges and mark-compacts this caused at about 10 µs
 * per delivery).
 */
const SIGNAL: PropertyDescriptor = {
  get(this: { [CONTROLLER]: LazyAbortController }) {
    return this[CONTROLLER].signal
  },
  enumerable: true,
  configurable: true,
}

/** The store's context with `signal` (made when first read), `verifiedWith` and `ordering` added. */
export function withSignal<C extends object>(
  context: C,
  controller: LazyAbortController,
  verifiedWith: VerifiedSecret | undefined,
  ordering?: Ordering,
): C & { signal: AbortSignal } {
  Object.defineProperty(context, CONTROLLER, { value: controller })
  Object.defineProperty(context, 'verifiedWith', { value: verifiedWith, enumerable: true })
  Object.defineProperty(context, 'ordering', { value: ordering, enumerable: true })
  return Object.defineProperty(context, 'signal', SIGNAL) as C & { signal: AbortSignal }
}
