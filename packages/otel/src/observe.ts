import { type Context, context, type Span, SpanStatusCode } from '@opentelemetry/api'

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function'

/** A short, low-cardinality name for what was thrown: its `code` (`ECONNREFUSED`), else its class name. */
export function errorType(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code
  if (typeof code === 'string') return code
  return error instanceof Error ? error.name : '_OTHER'
}

export function fail(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error))
  span.setAttribute('error.type', errorType(error))
  const message = error instanceof Error ? error.message : String(error)
  span.setStatus({ code: SpanStatusCode.ERROR, message: message.split('\n')[0] as string })
}

/** Runs `call` in `ctx`; `finish` is told once it returned, resolved, threw or rejected. */
export function observe<T>(
  ctx: Context,
  call: () => T,
  finish: (failure?: { error: unknown }, value?: unknown) => void,
): T {
  let result: T
  try {
    result = context.with(ctx, call)
  } catch (error) {
    finish({ error })
    throw error
  }
  if (!isThenable(result)) {
    finish(undefined, result)
    return result
  }
  return result.then(
    (value) => {
      finish(undefined, value)
      return value
    },
    (error: unknown) => {
      finish({ error })
      throw error
    },
  ) as T
}
