import { textOf } from './session.js'

/** Told of each statement a transaction's connection ran: its text, and its error if it failed. */
export type Note = (text: string, error?: unknown) => void

type Method = (...args: unknown[]) => unknown

/**
 * Wraps `methods` of `target` (one object: the transaction's connection or query runner) so that each statement they
 * run is noted, until the returned function puts them back. `callback`: the driver's callback API (the last function
 * argument answers); otherwise the method answers a promise.
 */
export function watchStatements(target: object, methods: string[], note: Note, callback = false): () => void {
  const object = target as Record<string, unknown>
  const restore: (() => void)[] = []
  for (const name of methods) {
    const original = object[name]
    if (typeof original !== 'function') continue
    const own = Object.hasOwn(object, name)
    const run = original as Method
    object[name] = callback
      ? function (this: unknown, ...args: unknown[]) {
          const text = textOf(args[0])
          const at = args.findLastIndex((arg) => typeof arg === 'function')
          if (at >= 0) {
            const answer = args[at] as Method
            args[at] = (error: unknown, ...rest: unknown[]) => {
              note(text, error ?? undefined)
              return answer(error, ...rest)
            }
            return run.apply(this, args)
          }
          // The mariadb connector (Sequelize's mariadb dialect) answers with a promise instead.
          const answer = run.apply(this, args)
          if (answer instanceof Promise) {
            answer.then(
              () => note(text),
              (error: unknown) => note(text, error),
            )
          }
          return answer
        }
      : async function (this: unknown, ...args: unknown[]) {
          const text = textOf(args[0])
          try {
            const result = await run.apply(this, args)
            note(text)
            return result
          } catch (error) {
            note(text, error)
            throw error
          }
        }
    restore.push(() => {
      if (own) object[name] = original
      else delete object[name]
    })
  }
  return () => {
    for (const undo of restore) undo()
  }
}
