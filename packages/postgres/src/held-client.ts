import type { Pool, PoolClient } from 'pg'

/** A client the store checked out of the pool, watched for connection errors while the store holds it. */
export interface HeldClient {
  readonly client: PoolClient
  /** What the connection failed with ('error' event: server ended it, socket lost), once it has. */
  readonly failure: Error | undefined
  /** Gives the client back, destroyed (never reused) when it failed or `error` is given. Idempotent. */
  release(error?: Error): void
}

const ignoreLateError = () => {}

/**
 * Checks a client out of `pool` with an `'error'` listener for as long as the store holds it. pg-pool removes its
 * own listener on checkout, so without one a connection the server ends meanwhile (a restart, a failover,
 * `pg_terminate_backend`, `idle_session_timeout`) emits an unhandled `'error'` and the process exits.
 */
export async function checkOut(pool: Pool): Promise<HeldClient> {
  const client = await pool.connect()
  let failure: Error | undefined
  let released = false
  const onError = (error: Error) => {
    failure ??= error
  }
  client.on('error', onError)
  return {
    client,
    get failure() {
      return failure
    },
    release(error) {
      if (released) return
      released = true
      const destroyed = error ?? failure
      client.release(destroyed)
      // A destroyed client is never handed out again; a socket error after its end must not throw either.
      if (destroyed) client.on('error', ignoreLateError)
      client.removeListener('error', onError)
    },
  }
}
