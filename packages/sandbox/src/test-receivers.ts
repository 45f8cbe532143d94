// Test helpers of the sandbox's own tests (not built): a real HTTP receiver on 127.0.0.1 that records
// what the sandbox sends. The repository's integration fixtures build on these.
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One request as the receiver got it, bytes untouched. */
export interface Received {
  method: string
  path: string
  headers: IncomingHttpHeaders
  body: Buffer
  /** Parsed body, when it is JSON. */
  json: Record<string, unknown> | undefined
}

/** What to answer: a status, or a status and a body. */
export type Answer = number | { status: number; body?: string }

export interface Receiver {
  url: string
  requests: Received[]
  close(): Promise<void>
}

/** The whole request body. */
export function readAll(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => resolve(Buffer.concat(chunks)))
    request.on('error', reject)
  })
}

/** Listens on a free loopback port; resolves with the base url. */
export async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** Closes `server`, cutting its open connections. */
export function closer(server: Server): () => Promise<void> {
  return () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
    })
}

/**
 * Records every request and answers what `answer` returns (200 by default). `answer` may return a
 * promise, to hold the response back.
 */
export async function startReceiver(
  answer: (request: Received, index: number) => Answer | Promise<Answer> = () => 200,
): Promise<Receiver> {
  const requests: Received[] = []
  const server = createServer(async (request, response) => {
    const body = await readAll(request)
    let json: Record<string, unknown> | undefined
    try {
      json = JSON.parse(body.toString('utf8'))
    } catch {
      json = undefined
    }
    const received: Received = {
      method: request.method ?? '',
      path: request.url ?? '',
      headers: request.headers,
      body,
      json,
    }
    requests.push(received)
    const result = await answer(received, requests.length - 1)
    const { status, body: text } = typeof result === 'number' ? { status: result, body: undefined } : result
    if (!response.destroyed) response.writeHead(status, { 'content-type': 'text/plain' }).end(text ?? String(status))
  })
  return { url: `${await listen(server)}/webhooks`, requests, close: closer(server) }
}

/**
 * A loopback port that refuses every connection, for a target that does not answer: 2, a privileged port nothing
 * listens on (fetch will not try 1). A port found free ({@link unusedPort}) can be taken by another server before the
 * send: under two whole test runs side by side, one was.
 */
export const REFUSING_PORT = 2

/** A free loopback port with nothing listening on it (for a server to listen on: see {@link REFUSING_PORT}). */
export async function unusedPort(): Promise<number> {
  const server = createServer()
  await listen(server)
  const { port } = server.address() as AddressInfo
  await closer(server)()
  return port
}
