import type { IncomingMessage, ServerResponse } from 'node:http'
import type { TLSSocket } from 'node:tls'
import { type Board, type BoardRequest, BodyTooLargeError, MAX_BODY_BYTES } from './types.js'

/** Reads at most MAX_BODY_BYTES of `req`, or rejects. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners('data')
        req.resume()
        reject(new BodyTooLargeError())
      } else chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}

/** A body a framework's parser read already, as text, held to the same {@link MAX_BODY_BYTES} as one read here. */
export function parsedBody(parsed: unknown): () => Promise<string> {
  return async () => {
    const text = typeof parsed === 'string' ? parsed : JSON.stringify(parsed)
    if (Buffer.byteLength(text) > MAX_BODY_BYTES) throw new BodyTooLargeError()
    return text
  }
}

/** The board's request from node's `req`, `base` being the mount path and `url` the rest (path and query). */
export function nodeRequest<R>(
  req: IncomingMessage,
  base: string,
  url: string,
  native: R,
  body: () => Promise<string> = () => readBody(req),
): BoardRequest<R> {
  const parsed = new URL(url, 'http://board.invalid')
  return {
    method: req.method ?? 'GET',
    path: url === '' || url.startsWith('?') ? '' : parsed.pathname,
    base,
    query: parsed.searchParams,
    header: (name) => {
      const value = req.headers[name]
      return Array.isArray(value) ? value.join(', ') : value
    },
    body,
    secure: (req.socket as TLSSocket | undefined)?.encrypted === true,
    native,
  }
}

export async function writeNode(board: Board<never>, request: BoardRequest<never>, res: ServerResponse) {
  const answer = await board.handle(request)
  res.writeHead(answer.status, answer.headers)
  res.end(request.method === 'HEAD' ? undefined : answer.body)
}

/** Options of {@link nodeBoard}. */
export interface NodeBoardOptions {
  /** Where the board is served, such as `/admin/payhooks` (no trailing slash). */
  path: string
}

/**
 * The board on a plain `node:http` server: the returned function answers requests under `options.path` and
 * returns true, or returns false (answering nothing) for any other path, so your server can answer those.
 * `authorize` gets node's `IncomingMessage`.
 *
 * @example
 * const serveBoard = nodeBoard(board, { path: '/admin/payhooks' })
 * createServer((req, res) => {
 *   if (serveBoard(req, res)) return
 *   res.writeHead(404).end()
 * })
 */
export function nodeBoard(
  board: Board<IncomingMessage>,
  options: NodeBoardOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const base = options.path.replace(/\/+$/, '')
  if (!base.startsWith('/')) throw new TypeError("nodeBoard: path must start with '/'")
  return (req, res) => {
    const url = req.url ?? '/'
    const rest = url.slice(base.length)
    if (!url.startsWith(base) || !(rest === '' || rest.startsWith('/') || rest.startsWith('?'))) return false
    void writeNode(board as Board<never>, nodeRequest(req, base, rest, req) as BoardRequest<never>, res)
    return true
  }
}
