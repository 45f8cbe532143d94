// Free loopback ports for the test servers (scripts/test-services.mjs, postgres-server.mjs, mariadb-server.mjs).
import { createServer } from 'node:net'

/** A loopback port free now: another process may still take it before the server that is given it binds. */
export function freePort() {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

/**
 * `start()` again, up to three tries, when it failed because the free port it was given was taken before its
 * server's bind (its error says "Address already in use"): other servers start beside it.
 */
export async function startOnFreePort(start) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start()
    } catch (error) {
      if (attempt >= 3 || !String(error?.message).includes('Address already in use')) throw error
    }
  }
}
