import { textOf } from './session.js'

/** Told of each statement a transaction's connection ran: its text, and its error if it failed. */
export type Note = (text: string, error?: unknown) => void

type Method = (...args: unknown[]) => unknown

/** Who is told of the statements of each watched object now (none between transactions). */
const notes = new WeakMap<object, Note>()
/** The methods wrapped on each object: wrapped once and kept, told through `notes`. */
const wrapped = new WeakMap<object, Set<string>>()

/** `run` wrapped so that each statement it runs on `target` is noted while `target` is watched. */
function noting(target: object, run: Method, callback: boolean): Method {
  return callback
    ? function (this: unknown, ...args: unknown[]) {
        const note = notes.get(target)
        if (note === undefined) return run.apply(this, args)
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
    : function (this: unknown, ...args: unknown[]) {
        const note = notes.get(target)
        if (note === undefined) return run.apply(this, args)
        const text = textOf(args[0])
        return (async () => {
          try {
            const result = await run.apply(this, args)
            note(text)
            return result
          } catch (error) {
            note(text, error)
            throw error
          }
        })()
      }
}

/**
 * Has `note` told of each statement that `methods` of `target` (one object: the transaction's connection or query
 * runner) run, until the returned function is called. `callback`: the driver's callback API (the last function
 * argument answers); otherwise the method answers a promise. The methods are wrapped once per object and the
 * wrappers kept (idle between transactions): putting them back would delete properties of a pooled connection,
 * which V8 then keeps in slow dictionary mode for the rest of its life.
 */
export function watchStatements(target: object, methods: string[], note: Note, callback = false): () => void {
  const object = target as Record<string, unknown>
  let done = wrapped.get(target)
  if (done === undefined) {
    done = new Set()
    wrapped.set(target, done)
  }
  for (const name of methods) {
    if (done.has(name)) continue
    const original = object[name]
    if (typeof original !== 'function') continue
    object[name] = noting(target, original as Method, callback)
    done.add(name)
  }
  notes.set(target, note)
  return () => {
    if (notes.get(target) === note) notes.delete(target)
  }
}
