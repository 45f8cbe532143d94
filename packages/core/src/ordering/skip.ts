import type { Handler, HandlerContext } from '../types.js'
import type { OnOptions } from './types.js'

/** `handler`, or with `skipSuperseded` a handler of the same name that does nothing for a superseded event. */
export function withOnOptions(handler: Handler<never, never>, options: OnOptions | undefined): Handler<never, never> {
  if (options?.skipSuperseded !== true) return handler
  const call = handler as Handler<unknown, HandlerContext>
  const skipping: Handler<unknown, HandlerContext> = (event, context) =>
    context.ordering?.superseded === true ? undefined : call(event, context)
  Object.defineProperty(skipping, 'name', { value: handler.name })
  return skipping as Handler<never, never>
}
