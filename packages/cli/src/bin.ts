#!/usr/bin/env node
import { cleanText } from './prove/answer-text.js'
import { run } from './run.js'

// `payhooks subscriptions list | head -1`: a reader that went away is not an error of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
  throw error
})

// An error no command caught (thrown in a socket's callback, say) ends the process with one line, never a stack:
// exit 2 for prove (it could not run; 1 says a check failed), 1 for the others.
const crash = (error: unknown) => {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`payhooks: unexpected error: ${cleanText(message.split('\n')[0] ?? '')}\n`)
  process.exit(process.argv[2] === 'prove' ? 2 : 1)
}
process.on('uncaughtException', crash)
process.on('unhandledRejection', crash)

process.exitCode = await run(process.argv.slice(2))
// The command is over; a module loaded by `dead-letters --module` may still hold connections open (its Redis
// clients). Exit once what was written to stdout is flushed.
process.stdout.write('', () => process.exit())
