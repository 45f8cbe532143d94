import type { Pool } from 'mysql2/promise'

/** One connection a library lent the store, outside any transaction, until `release`. */
export interface Lent {
  run(text: string, values: unknown[]): Promise<unknown>
  release(broken: boolean): unknown
}

/** A raw driver connection as its callback API runs statements: mysql2's (Knex's, TypeORM's, Sequelize's). */
export interface CallbackConnection {
  query(text: string, values: unknown[], callback: (error: unknown, result: unknown) => void): unknown
}

/** Runs `text` with `values` (`?`, escaped by the driver) on a raw connection of mysql2 or of the mariadb connector. */
export function runOnRaw(connection: CallbackConnection, text: string, values: unknown[]): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const answer = connection.query(text, values, (error, result) => (error ? reject(error) : resolve(result)))
    // The mariadb connector's promise API answers with a promise and calls no callback (mysql2's Query throws when
    // asked for its then).
    if (answer instanceof Promise) answer.then(resolve, reject)
  })
}

/**
 * A mysql2/promise `Pool` as far as the store uses one (`query`, `getConnection`, whether it was ended, its size),
 * over connections a library lends: the store's claims, renewals and upkeep then go through the library's own pool.
 * `options.query`, when the library runs one statement on a connection it takes and gives back itself, serves the
 * pool's `query` (the claims and renewals) instead of a connection lent for it.
 */
export function libraryPool(
  lend: () => Promise<Lent>,
  options: { closed(): boolean; size: number; query?: (text: string, values: unknown[]) => Promise<unknown> },
): Pool {
  const connection = async () => {
    const lent = await lend()
    let broken = false
    return {
      async query(text: string, values: unknown[] = []) {
        try {
          return [await lent.run(text, values), []]
        } catch (error) {
          // A statement's error leaves the connection usable; a lost connection has no errno from the server.
          if (typeof (error as { errno?: unknown }).errno !== 'number') broken = true
          throw error
        }
      },
      release: () => lent.release(broken),
      destroy: () => lent.release(true),
    }
  }
  const once = options.query
  const shape = {
    async query(text: string, values: unknown[] = []) {
      if (once) return [await once(text, values), []]
      const one = await connection()
      try {
        return await one.query(text, values)
      } finally {
        await one.release()
      }
    },
    getConnection: connection,
    pool: {
      getConnection() {},
      get _closed() {
        return options.closed()
      },
      config: { connectionLimit: options.size },
    },
  }
  return shape as unknown as Pool
}

/** What `value` is, in a few words, for a refusal: never its contents (a pool's config holds a password). */
export function described(value: unknown): string {
  if (value === null || value === undefined) return String(value)
  if (typeof value === 'function') return value.name ? `a function (${value.name})` : 'a function'
  if (typeof value !== 'object') return `a ${typeof value}`
  const object = value as Record<string, unknown>
  if (typeof object.getConnection === 'function' && typeof object.query === 'function' && 'pool' in object)
    return 'a mysql2/promise Pool'
  if (typeof object.getConnection === 'function' && typeof object.promise === 'function') return 'a mysql2 Pool'
  if (typeof object.connect === 'function' && 'totalCount' in object) return 'a pg.Pool'
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
