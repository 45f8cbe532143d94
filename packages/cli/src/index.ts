export type { CliIo } from './context.js'
export { run } from './run.js'
