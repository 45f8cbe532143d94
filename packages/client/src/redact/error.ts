const MAX_CAUSE_DEPTH = 5
/** Fields of Node's and undici's errors that describe the local failure (`ECONNREFUSED 127.0.0.1:4010`). */
const ERROR_FIELDS = ['code', 'errno', 'syscall', 'address', 'port'] as const
const BUILT_IN_ERRORS = [TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError] as const

/** A copy of `value` (an error and its cause chain) with `text` applied to its texts: no raw server bytes kept. */
export function redactError(value: unknown, text: (value: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return text(value)
  if (typeof value !== 'object' || value === null) return value
  if (!(value instanceof Error) || depth >= MAX_CAUSE_DEPTH) return `[${typeof value} withheld]`
  const Kind = BUILT_IN_ERRORS.find((kind) => value instanceof kind) ?? Error
  const copy = new Kind(text(value.message)) as Error & Record<string, unknown>
  if (copy.name !== value.name) {
    Object.defineProperty(copy, 'name', { value: text(String(value.name)), configurable: true, writable: true })
  }
  copy.stack = typeof value.stack === 'string' ? text(value.stack) : copy.stack
  const source = value as unknown as Record<string, unknown>
  // Other fields (undici's parser error keeps the raw bytes it choked on in `data`) are dropped.
  for (const field of ERROR_FIELDS) {
    const fieldValue = source[field]
    if (typeof fieldValue === 'string') copy[field] = text(fieldValue)
    else if (typeof fieldValue === 'number') copy[field] = fieldValue
  }
  if ('cause' in value && value.cause !== undefined) {
    Object.defineProperty(copy, 'cause', {
      value: redactError(value.cause, text, depth + 1),
      configurable: true,
      writable: true,
      enumerable: false,
    })
  }
  return copy
}
