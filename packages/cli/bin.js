#!/usr/bin/env node
// The `payhooks` bin: committed (unlike dist/), so `pnpm install` links it before the first build.
try {
  await import('./dist/bin.js')
} catch (error) {
  if (error?.code !== 'ERR_MODULE_NOT_FOUND' || !String(error.message).includes('bin.js')) throw error
  process.stderr.write('payhooks: the CLI is not built yet: run `pnpm build` in the repository first\n')
  process.exitCode = 1
}
