#!/usr/bin/env node
import { run } from './run.js'

// `payhooks subscriptions list | head -1`: a reader that went away is not an error of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
  throw error
})

process.exitCode = await run(process.argv.slice(2))
// The command is over; a module loaded by `dead-letters --module` may still hold connections open (its Redis
// clients). Exit once what was written to stdout is flushed.
process.stdout.write('', () => process.exit())
