/** Whether `value` is a `pg.Pool` (of any copy of pg). */
export const isPgPool = (value: unknown): boolean =>
  typeof value === 'object' &&
  value !== null &&
  typeof (value as { connect?: unknown }).connect === 'function' &&
  'totalCount' in value &&
  'idleCount' in value

const isPgClient = (value: object) =>
  typeof (value as { connect?: unknown }).connect === 'function' && 'connectionParameters' in value

/** What `value` is, in a few words, for an error message: `a pg.Pool`, `a Kysely`, `undefined`. */
export function described(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  if (typeof value === 'function') return value.name ? `a function (${value.name})` : 'a function'
  if (typeof value !== 'object') return `a ${typeof value}`
  if (isPgPool(value)) return 'a pg.Pool'
  if (isPgClient(value)) return 'a pg.Client'
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name
  if (typeof name !== 'string' || name === '' || name === 'Object') return 'a plain object'
  return `${/^[AEIOU]/.test(name) ? 'an' : 'a'} ${name}`
}

/** Throws a `TypeError` naming the binding, what it got and what it needs. */
export function refuse(where: string, got: unknown, needs: string): never {
  throw new TypeError(`${where}: got ${described(got)}; it needs ${needs}`)
}

/** Whether `value` has every one of `methods` as a function. */
export const hasMethods = (value: unknown, ...methods: string[]) =>
  (typeof value === 'object' || typeof value === 'function') &&
  value !== null &&
  methods.every((method) => typeof (value as Record<string, unknown>)[method] === 'function')

/** A library's object that cannot serve (ended, destroyed, not initialized): thrown by a binding's `check`. */
export class UnusableLibraryError extends Error {
  readonly code = 'library_unusable'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'UnusableLibraryError'
  }
}
