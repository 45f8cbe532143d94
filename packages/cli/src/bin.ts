#!/usr/bin/env node
import { run } from './run.js'

// `payhooks subscriptions list | head -1`: a reader that went away is not an error of ours.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0)
  throw error
})

process.exitCode = await run(process.argv.slice(2))
