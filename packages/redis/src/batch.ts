import type { Cluster, Redis } from 'ioredis'

/** A command of a batch: a method of ioredis's client (and of its `Pipeline`) and its arguments. */
export type BatchCommand = [
  name: 'set' | 'getBuffer' | 'hgetBuffer' | 'mgetBuffer' | 'fcall',
  ...args: (string | number | Buffer)[],
]
/** Each command's error or reply, in order, as a pipeline's `exec` answers them. */
export type BatchReplies = [Error | null, unknown][]

type Send = (...args: (string | number | Buffer)[]) => unknown
const settle = (sent: unknown): Promise<[Error | null, unknown]> =>
  (sent as Promise<unknown>).then(
    (value) => [null, value],
    (error: Error) => [error, undefined],
  )

/**
 * Sends `commands` in one write, one round trip, answered as a pipeline's `exec` answers (null when it was aborted).
 * On a standalone Redis that is ready, each is sent on its own while the socket is corked: ioredis writes a command as
 * it is called, so they leave together on `uncork()`, and no `Pipeline` is built (its constructor copies every script
 * defined on the client, the store's 26 and any other's: it doubled the client CPU of a claim). Otherwise (a Cluster,
 * which routes by slot, or a client not yet connected, whose offline queue keeps a pipeline whole) a pipeline.
 */
export function inOneWrite(client: Redis | Cluster, commands: BatchCommand[]): Promise<BatchReplies | null> {
  const stream = (client as Redis).isCluster ? undefined : (client as Redis).stream
  if (client.status !== 'ready' || stream === undefined || !stream.writable) {
    const pipe = client.pipeline()
    for (const [name, ...args] of commands) (pipe[name] as unknown as Send).apply(pipe, args)
    return pipe.exec()
  }
  const sent: Promise<[Error | null, unknown]>[] = []
  stream.cork()
  try {
    for (const [name, ...args] of commands) sent.push(settle((client[name] as unknown as Send).apply(client, args)))
  } finally {
    stream.uncork()
  }
  return Promise.all(sent)
}
