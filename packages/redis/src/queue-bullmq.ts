// Kept apart from queue-shared.ts so that no public declaration file refers to the bullmq package.
type Bullmq = typeof import('bullmq')
let bullmq: Promise<Bullmq> | undefined

/** bullmq is an optional peer dependency: loaded on first use, so store-only users need not install it. */
export function loadBullmq(): Promise<Bullmq> {
  bullmq ??= import('bullmq').catch((cause: unknown) => {
    bullmq = undefined
    throw new Error('@payhooks/redis: the queue mode needs the bullmq package (npm install bullmq)', { cause })
  })
  return bullmq
}
