/** Whether `value` is a promise-like: store and provider methods may answer either way, and sync answers skip `await`. */
export const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as PromiseLike<unknown> | undefined)?.then === 'function'
